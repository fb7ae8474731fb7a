// The course drill editor: each code field (and the TOML view's text) gets the site's code editor (CodeMirror,
// static/dist/editor.js); the <textarea> stays the form field. Without JavaScript the textareas work as they are.
(function () {
  "use strict";

  function dark() {
    var theme = document.documentElement.getAttribute("data-theme");
    if (theme === "dark" || theme === "light") return theme === "dark";
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function upgrade(textarea) {
    if (!window.QuizEditor || textarea.getAttribute("data-upgraded")) return;
    var host = document.createElement("div");
    host.className = "editor-host";
    textarea.parentNode.insertBefore(host, textarea.nextSibling);
    var editor = window.QuizEditor.mount(host, textarea, { dark: dark() });
    textarea.hidden = true;
    textarea.setAttribute("data-upgraded", "1");
    textarea.quizEditor = editor;
    var label = textarea.id && document.querySelector("label[for='" + textarea.id + "']");
    if (label) {
      editor.view.contentDOM.setAttribute("aria-label", label.textContent.trim());
      label.addEventListener("click", function () { editor.view.focus(); });
    }
  }

  function start() {
    document.querySelectorAll("textarea[data-code-field], textarea[data-toml]").forEach(upgrade);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
