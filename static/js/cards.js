// Card pages: render math with KaTeX, and drive the review with the keyboard.
// Everything here is an enhancement: without it the forms still post and the answer still opens.
(function () {
  "use strict";

  function renderMath(root) {
    if (typeof window.renderMathInElement !== "function") return;
    window.renderMathInElement(root, {
      delimiters: [
        { left: "\\[", right: "\\]", display: true },
        { left: "\\(", right: "\\)", display: false },
        { left: "$$", right: "$$", display: true },
      ],
      throwOnError: false,
    });
  }

  // When the current card appeared, for the rating's duration_ms.
  var shownAt = Date.now();

  function panel() {
    return document.getElementById("review-panel");
  }

  function onNewContent(root) {
    renderMath(root || document.body);
    if (root && root.id === "review-panel") {
      shownAt = Date.now();
      var summary = root.querySelector("[data-answer] > summary");
      if (summary) summary.focus({ preventScroll: true });
    }
  }

  function isTyping(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  function submit(form, button) {
    if (!form) return;
    // A key can beat htmx to freshly swapped content; processing twice is harmless, a plain post is a reload.
    if (window.htmx) window.htmx.process(form);
    if (button) button.click();
    else form.requestSubmit();
  }

  function onKey(event) {
    var root = panel();
    if (!root || isTyping(event.target) || event.altKey || event.metaKey) return;
    if (event.ctrlKey) {
      if (event.key === "z" || event.key === "Z") {
        event.preventDefault();
        submit(root.querySelector("[data-undo]"));
      }
      return;
    }
    var answer = root.querySelector("[data-answer]");
    if (event.key === " " || event.key === "Enter") {
      if (answer && !answer.open) {
        event.preventDefault();
        answer.open = true;
        var good = answer.querySelector('[data-key="3"]');
        if (good) good.focus({ preventScroll: true });
      }
      return;
    }
    if (answer && answer.open && /^[1-4]$/.test(event.key)) {
      event.preventDefault();
      var button = answer.querySelector('[data-key="' + event.key + '"]');
      submit(button && button.form, button);
    } else if (event.key === "e" || event.key === "E") {
      var edit = root.querySelector("[data-edit]");
      if (edit) window.location.href = edit.href;
    } else if (event.key === "-") {
      submit(root.querySelector("[data-bury]"));
    } else if (event.key === "@") {
      submit(root.querySelector("[data-suspend]"));
    }
  }

  // Capture phase: runs before htmx serialises the form, so the duration goes with it.
  document.addEventListener(
    "submit",
    function (event) {
      var field = event.target.querySelector && event.target.querySelector("[data-duration]");
      if (field) field.value = String(Math.max(0, Date.now() - shownAt));
    },
    true,
  );
  // htmx leaves the page alone on 4xx; say why instead (a card no longer due, a stale form).
  document.addEventListener("htmx:responseError", function (event) {
    var root = panel();
    if (!root) return;
    var note = document.createElement("p");
    note.className = "message error";
    note.setAttribute("role", "alert");
    note.textContent =
      event.detail.xhr.responseText.slice(0, 200) ||
      document.body.getAttribute("data-i18n-error") ||
      "Something went wrong; reload the page.";
    root.prepend(note);
  });
  document.addEventListener("keydown", onKey);
  document.addEventListener("DOMContentLoaded", function () {
    onNewContent(document.body);
    var root = panel();
    if (root) onNewContent(root);
    if (window.htmx) {
      window.htmx.onLoad(function (element) {
        if (element !== document.body) onNewContent(element);
      });
    }
  });
})();
