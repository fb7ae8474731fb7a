// Copy buttons: <button data-copy="ID" hidden> copies the text of #ID (or an input's value) and says so.
// Without JavaScript the buttons stay hidden and the text can be selected as usual.
(function () {
  "use strict";

  function textOf(target) {
    return "value" in target && target.tagName !== "BUTTON" ? target.value : target.textContent;
  }

  function copy(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target || !navigator.clipboard) return;
    navigator.clipboard.writeText(textOf(target)).then(function () {
      var label = button.textContent;
      button.textContent = document.body.getAttribute("data-i18n-copied") || "Copied";
      button.setAttribute("data-copied", "true");
      window.setTimeout(function () {
        button.textContent = label;
      }, 1500);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      if (navigator.clipboard) button.hidden = false;
    });
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (button) copy(button);
  });
})();
