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
    document.querySelectorAll(".prompt [data-lang], .hints [data-lang], .verdict-hints [data-lang]").forEach(function (block) {
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

  // The learner's draft per drill: restored when it was written after their last submission (the server
  // prefills that one), so closing the tab never loses work. Stored as {code, at} with at in seconds.
  function keepDraft(form, textarea) {
    var key = textarea.getAttribute("data-draft-key");
    if (!key) return;
    var sent = textarea.value;
    var draft = null;
    try {
      draft = JSON.parse(stored(key) || "null");
    } catch (error) {
      draft = null;
    }
    var lastSent = Number(textarea.getAttribute("data-last-sent") || 0);
    if (draft && typeof draft.code === "string" && draft.at > lastSent && draft.code !== textarea.value) {
      textarea.value = draft.code;
      var note = form.querySelector("[data-draft-note]");
      if (note) {
        note.hidden = false;
        note.querySelector("[data-draft-discard]").addEventListener("click", function () {
          store(key, "");
          if (editor && editor.setValue) editor.setValue(sent);
          textarea.value = sent;
          note.hidden = true;
        });
      }
    }
    var timer = null;
    function save() {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () {
        store(key, JSON.stringify({ code: textarea.value, at: Date.now() / 1000 }));
      }, 300);
    }
    form.addEventListener("input", save);
    form.addEventListener("keyup", save);
    form.addEventListener("paste", save);
  }

  function mountEditor(form) {
    var textarea = form.querySelector("[data-code]");
    var host = form.querySelector("[data-editor]");
    if (!textarea || !host) return;
    keepDraft(form, textarea);
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
    // The statement follows the interface language (the page's <html lang>, docs/i18n.md); the toggle's choice
    // is kept apart for each interface language, so switching the interface switches the statement too.
    var pageLang = (document.documentElement.lang || "en").toLowerCase().indexOf("zh") === 0 ? "zh" : "en";
    var langKey = LANG_KEY + ":" + pageLang;
    var lang = stored(langKey) || pageLang;
    applyLang(lang);
    var langToggle = document.querySelector("[data-lang-toggle]");
    if (langToggle) {
      langToggle.hidden = false;
      langToggle.addEventListener("click", function () {
        lang = lang === "zh" ? "en" : "zh";
        store(langKey, lang);
        applyLang(lang);
      });
    }
    // An opened hint and a verdict arrive by htmx: show them in the statement's language too.
    document.body.addEventListener("htmx:afterSettle", function () {
      applyLang(lang);
    });
    if (window.matchMedia && !stored(THEME_KEY)) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function (event) {
        applyTheme(event.matches);
      });
    }
    // A verdict's counterexample into "Run": its arguments in the box, the box opened, the Run button at hand.
    document.body.addEventListener("click", function (event) {
      var use = event.target.closest && event.target.closest("[data-use-counterexample]");
      if (!use) return;
      var box = document.querySelector("[data-arguments]");
      var own = document.querySelector("[data-run-own]");
      if (!box) return;
      box.value = use.getAttribute("data-counterexample-text");
      if (own) own.open = true;
      box.focus();
      box.scrollIntoView({ block: "center" });
    });
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
