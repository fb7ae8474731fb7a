// The drill hub: j/k or the arrow keys move between drills, Enter opens the one selected.
// An enhancement only: without JavaScript every title is a plain link and the filters a GET form.
(function () {
  "use strict";

  function links() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-drill-rows] [data-drill-link]"));
  }

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || (target && target.isContentEditable);
  }

  function move(step) {
    var all = links();
    if (!all.length) return;
    var at = all.indexOf(document.activeElement);
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    all.forEach(function (link) {
      link.closest("tr").classList.remove("selected");
    });
    all[next].closest("tr").classList.add("selected");
    all[next].focus();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "j" || event.key === "ArrowDown") {
      event.preventDefault();
      move(1);
    } else if (event.key === "k" || event.key === "ArrowUp") {
      event.preventDefault();
      move(-1);
    } else if (event.key === "/") {
      var search = document.querySelector("[data-hub-search]");
      if (search) {
        event.preventDefault();
        search.focus();
      }
    }
    // Enter on a focused link follows it natively.
  });
})();
