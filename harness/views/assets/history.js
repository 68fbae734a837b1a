// The history page's filters: status, backend and text (#q=TEXT on load); rows are hidden, never rewritten.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("#cases tbody tr"));
  var status = document.getElementById("status"), backend = document.getElementById("backend");
  var query = document.getElementById("q"), shown = document.getElementById("shown");
  var total = shown.textContent.replace(/^\d+ of /, "");
  function apply() {
    var words = query.value.toLowerCase().split(/\s+/).filter(Boolean), count = 0;
    rows.forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var keep = (!status.value || row.dataset.status === status.value)
        && (!backend.value || row.dataset.backend === backend.value)
        && words.every(function (w) { return text.indexOf(w) >= 0; });
      row.hidden = !keep;
      count += keep ? 1 : 0;
    });
    shown.textContent = "Showing " + count + " of " + total;
  }
  var linked = /^#q=(.*)$/.exec(location.hash);
  if (linked) query.value = decodeURIComponent(linked[1]);
  [status, backend].forEach(function (el) { el.addEventListener("change", apply); });
  query.addEventListener("input", apply);
  apply();
  document.body.setAttribute("data-ready", "1");
})();
