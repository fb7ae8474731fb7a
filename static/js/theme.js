// The learner's light/dark choice (made with the drill page's toggle) on every page, before it paints.
// Without a stored choice the stylesheet follows the system (prefers-color-scheme).
(function () {
  "use strict";
  try {
    var choice = window.localStorage.getItem("quizsite-drill-theme");
    if (choice === "dark" || choice === "light") document.documentElement.setAttribute("data-theme", choice);
  } catch (error) {
    // Storage blocked: the system's choice stands.
  }
})();
