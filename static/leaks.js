/* The leak review by keyboard: j / k (or the arrow keys) move between chunks, x ticks the
   chunk for a decision on a selection, and a letter decides: e excludes the chunk, d drops the query,
   r marks it for re-judging, n keeps it (not a leak; k is taken by moving up). With chunks ticked in
   the current query, the decision goes to the ticked chunks; otherwise to the current chunk. The
   forms are the page's own (htmx posts them, CSRF included); keys typed in a field are left alone. */
(function () {
  "use strict";
  var DECISIONS = { e: "exclude_chunk", d: "drop_query", r: "rejudge", n: "keep" };
  var current = null; // [query section id, chunk id]

  function chunks() { return Array.prototype.slice.call(document.querySelectorAll("li.leak-chunk")); }

  function find() {
    if (!current) { return null; }
    var section = document.getElementById(current[0]);
    if (!section) { return null; }
    return chunks().filter(function (li) {
      return li.closest("section") === section && li.dataset.chunk === current[1];
    })[0] || null;
  }

  function show(li) {
    chunks().forEach(function (c) { c.classList.remove("current"); c.removeAttribute("aria-current"); });
    if (!li) { current = null; return; }
    current = [li.closest("section").id, li.dataset.chunk];
    li.classList.add("current");
    li.setAttribute("aria-current", "true");
    li.tabIndex = -1;
    li.focus({ preventScroll: true });
    li.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var all = chunks();
    var i = all.indexOf(find());
    show(all[Math.min(Math.max(i < 0 ? 0 : i + step, 0), all.length - 1)] || null);
  }

  function decide(li, decision) {
    var section = li.closest("section");
    var ticked = section.querySelectorAll("input[name=finding]:checked");
    var form = ticked.length ? section.querySelector("form.leak-bulk") : li.querySelector("form.leak-decide");
    if (!form) { return; }
    form.querySelector("select[name=decision]").value = decision;
    if (ticked.length) {
      form.querySelector("button[value=selected]").click(); // a click: htmx sends the button's scope
    } else {
      form.requestSubmit();
    }
  }

  document.addEventListener("keydown", function (event) {
    if (!document.querySelector("li.leak-chunk") || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(target.tagName))) { return; }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    var li = find();
    if (key === "j" || key === "ArrowDown") { move(1); }
    else if (key === "k" || key === "ArrowUp") { move(-1); }
    else if (key === "x" && li) { var box = li.querySelector("input[name=finding]"); if (box) { box.checked = !box.checked; } }
    else if (DECISIONS[key] && li) { decide(li, DECISIONS[key]); }
    else { return; }
    event.preventDefault();
  });

  // After htmx swaps a query's section, the same chunk stays current.
  document.addEventListener("htmx:afterSettle", function () { if (current) { show(find()); } });
})();
