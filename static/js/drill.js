// The drill page: CodeMirror over the <textarea>, Ctrl+Enter submits, the prompt's language and the theme toggles.
// An enhancement only: without JavaScript the textarea posts the code and the submission page refreshes itself.
(function () {
  "use strict";

  var THEME_KEY = "quizsite-drill-theme";
  var LANG_KEY = "quizsite-drill-lang";
  var editor = null;

  function stored(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (error) {
      return null;
    }
  }

  function store(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch (error) {
      /* private mode: the choice lasts for this page only */
    }
  }

  function prefersDark() {
    var choice = stored(THEME_KEY);
    if (choice === "dark" || choice === "light") return choice === "dark";
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function applyTheme(dark) {
    document.documentElement.setAttribute("data-theme", dark ? "dark" : "light");
    if (editor) editor.setDark(dark);
  }

  function applyLang(lang) {
    document.querySelectorAll(".prompt [data-lang]").forEach(function (block) {
      block.hidden = block.getAttribute("data-lang") !== lang;
    });
    var toggle = document.querySelector("[data-lang-toggle]");
    if (toggle) toggle.textContent = lang === "zh" ? "English" : "中文";
  }

  function submitButton() {
    return document.querySelector("[data-drill-form] [data-submit]");
  }

  function submitNow() {
    var button = submitButton();
    if (button && !button.disabled) button.click();
  }

  function mountEditor(form) {
    var textarea = form.querySelector("[data-code]");
    var host = form.querySelector("[data-editor]");
    if (!textarea || !host) return;
    textarea.addEventListener("keydown", function (event) {
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        submitNow();
      }
    });
    if (!window.QuizEditor || typeof window.QuizEditor.mount !== "function") return;
    editor = window.QuizEditor.mount(host, textarea, { dark: prefersDark(), onSubmit: submitNow });
    host.hidden = false;
    textarea.hidden = true;
    textarea.setAttribute("aria-hidden", "true");
    window.quizDrillEditor = editor; // for tests and the console
  }

  function setUp() {
    var form = document.querySelector("[data-drill-form]");
    if (!form) return;
    mountEditor(form);
    applyTheme(prefersDark());
    var themeToggle = document.querySelector("[data-theme-toggle]");
    if (themeToggle) {
      themeToggle.hidden = false;
      themeToggle.addEventListener("click", function () {
        var dark = document.documentElement.getAttribute("data-theme") !== "dark";
        store(THEME_KEY, dark ? "dark" : "light");
        applyTheme(dark);
      });
    }
    var lang = stored(LANG_KEY) || ((navigator.language || "").toLowerCase().indexOf("zh") === 0 ? "zh" : "en");
    applyLang(lang);
    var langToggle = document.querySelector("[data-lang-toggle]");
    if (langToggle) {
      langToggle.hidden = false;
      langToggle.addEventListener("click", function () {
        lang = lang === "zh" ? "en" : "zh";
        store(LANG_KEY, lang);
        applyLang(lang);
      });
    }
    if (window.matchMedia && !stored(THEME_KEY)) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function (event) {
        applyTheme(event.matches);
      });
    }
    // While a submission is being sent, a second Ctrl+Enter must not queue it twice.
    form.addEventListener("htmx:beforeRequest", function () {
      form.querySelectorAll("button[type=submit]").forEach(function (b) {
        b.disabled = true;
      });
    });
    form.addEventListener("htmx:afterRequest", function () {
      form.querySelectorAll("button[type=submit]").forEach(function (b) {
        b.disabled = false;
      });
    });
  }

  document.addEventListener("DOMContentLoaded", setUp);
})();
