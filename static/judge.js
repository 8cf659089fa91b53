// golden's keyboard handling for the judging page. Every key is shown on the page; every action is
// a real form or link, so the page also works without this script (and without htmx).
//
//   digit  label the pair with that grade and move on (htmx swaps in the next pair)
//   b      back to the previous pair          s  skip this pair
//   u      unsure: open the note, Enter sends it, Esc cancels
//   g      show / hide the guidelines         Esc closes them
(function () {
  "use strict";
  var busy = false;

  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("htmx:afterSwap", function (event) {
    // a new pair on screen clears an earlier error message
    var msg = document.getElementById("messages");
    if (msg && event.detail.target && event.detail.target.id === "pair") { msg.innerHTML = ""; }
  });

  function pair() { return document.getElementById("pair"); }

  function guidelines() { return document.getElementById("guidelines"); }

  function toggleGuidelines() {
    var dialog = guidelines();
    if (!dialog || typeof dialog.showModal !== "function") { return false; }
    if (dialog.open) { dialog.close(); } else { dialog.showModal(); }
    return true;
  }

  function openUnsure() {
    var details = document.getElementById("unsure");
    if (!details) { return; }
    details.open = true;
    var note = details.querySelector("textarea");
    if (note) { note.focus(); }
  }

  function closeUnsure() {
    var details = document.getElementById("unsure");
    if (details) { details.open = false; }
    if (document.activeElement) { document.activeElement.blur(); }
  }

  function press(key) {
    var root = pair();
    if (!root) { return false; }
    var el = root.querySelector('[data-key="' + key + '"]');
    if (!el || el.disabled) { return false; }
    el.click();
    return true;
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-opens-guidelines]");
    if (link && toggleGuidelines()) { event.preventDefault(); }
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT");
    if (typing) {
      if (target.closest("#unsure")) {
        if (event.key === "Escape") { event.preventDefault(); closeUnsure(); }
        else if (event.key === "Enter" && !event.shiftKey) {
          event.preventDefault();
          if (!busy) { press("unsure-send"); }
        }
      }
      return;
    }
    var dialog = guidelines();
    if (dialog && dialog.open) {
      if (event.key === "g" || event.key === "?") { event.preventDefault(); dialog.close(); }
      return; // Esc is handled by the dialog itself
    }
    if (busy) { if (/^[0-9bsug]$/.test(event.key)) { event.preventDefault(); } return; }
    var key = event.key;
    if (key === "ArrowLeft") { key = "b"; }
    if (key === "?") { key = "g"; }
    if (/^[0-9]$/.test(key) || key === "b" || key === "s") {
      if (press(key)) { event.preventDefault(); }
    } else if (key === "u") {
      event.preventDefault();
      openUnsure();
    } else if (key === "g") {
      event.preventDefault();
      toggleGuidelines();
    }
  });
})();
