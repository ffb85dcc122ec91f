// Optional comforts only: the page reads the same with scripts off.
// Click a header of a .sortable table to sort it; printing opens every <details>.
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    if (v === null) { v = cell.textContent.trim(); }
    var n = parseFloat(v.replace(/,/g, ""));
    return isNaN(n) || !/^[-+]?[\d.,]/.test(v) ? v.toLowerCase() : n;
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var asc = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.addEventListener("click", function () { sortBy(table, i, th); });
    });
  });
  var closed = [];
  window.addEventListener("beforeprint", function () {
    closed = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    closed.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (d) { d.open = false; });
    closed = [];
  });
})();
