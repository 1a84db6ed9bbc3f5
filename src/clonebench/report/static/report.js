// Sorting, speaker and failure filters and "worst first" shortcuts of the per-sample table. No network, no
// libraries. With failure verdicts (config.failures), rows start worst first: failed rows, then by number of flags.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("report-config").textContent);
  var table = document.getElementById("samples-table");
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var shown = document.getElementById("shown");

  function cellValue(row, index, numeric) {
    var raw = row.cells[index].getAttribute("data-v");
    if (!numeric) { return raw || ""; }
    return raw === null || raw === "" ? NaN : parseFloat(raw);
  }

  function sortBy(index, ascending) {
    var numeric = headers[index].getAttribute("data-sort") === "num";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      if (numeric) {
        if (isNaN(x) && isNaN(y)) { return 0; }
        if (isNaN(x)) { return 1; }           // rows without a value go last either way
        if (isNaN(y)) { return -1; }
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    headers.forEach(function (h) { h.classList.remove("asc", "desc"); });
    headers[index].classList.add(ascending ? "asc" : "desc");
  }

  headers.forEach(function (header, index) {
    if (!header.hasAttribute("data-sort")) { return; }
    header.addEventListener("click", function () {
      sortBy(index, !header.classList.contains("asc"));
    });
  });

  function columnIndex(title) {
    for (var i = 0; i < headers.length; i++) {
      if (headers[i].getAttribute("data-key") === title) { return i; }
    }
    return -1;
  }

  function shortcut(id, title, ascending) {
    var button = document.getElementById(id);
    var index = title === null ? -1 : columnIndex(title);
    if (index < 0) { button.disabled = true; return; }
    button.addEventListener("click", function () { sortBy(index, ascending); });
  }
  shortcut("worst-sim", config.sim, true);
  shortcut("worst-wer", config.wer, false);

  // failed rows first, then by number of flags (over every run); ties keep their order (a stable sort)
  function worstFailuresFirst() {
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      return (parseFloat(b.getAttribute("data-worst")) || 0) - (parseFloat(a.getAttribute("data-worst")) || 0);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    headers.forEach(function (h) { h.classList.remove("asc", "desc"); });
  }

  var failureFilter = document.getElementById("failure-filter");

  function failureShown(row) {
    var wanted = failureFilter ? failureFilter.value : "";
    if (!wanted) { return true; }
    if (wanted === "*") { return row.getAttribute("data-failed") === "1"; }
    return (row.getAttribute("data-flags") || "").split(" ").indexOf(wanted) >= 0;
  }

  function filter() {
    var speaker = document.getElementById("speaker").value;
    var count = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var visible = (!speaker || row.getAttribute("data-speaker") === speaker) && failureShown(row);
      row.hidden = !visible;
      if (visible) { count++; }
    });
    shown.textContent = count + " of " + body.rows.length + " samples";
  }
  document.getElementById("speaker").addEventListener("change", filter);
  if (failureFilter) { failureFilter.addEventListener("change", filter); }
  if (config.failures && config.failures.length) {
    document.getElementById("worst-fail").addEventListener("click", worstFailuresFirst);
    worstFailuresFirst();
  }
  filter();
}());
