// golden's keyboard handling for the judging page. Every key is shown on the page; every action is
// a real form or link, so the page also works without this script (and without htmx).
//
//   digit  label the pair with that grade and move on (htmx swaps in the next pair)
//   b      back to the previous pair          s  skip this pair
//   u      unsure: open the note, Enter sends it, Esc cancels
//   g      show / hide the guidelines         Esc closes them
(function () {
  "use strict";

  // While an answer is on its way, keys are dropped (a second press meant for a pair not yet on
  // screen, e.g. a double press). Once the next pair is on screen but htmx has not yet wired its
  // forms (the settle step), a key is kept and replayed, so fast typing never submits natively.
  var sending = false, settling = false, pending = null;
  document.addEventListener("htmx:beforeRequest", function () { sending = true; });
  document.addEventListener("htmx:beforeSwap", function (event) {
    sending = false;
    settling = !!event.detail.shouldSwap;
  });
  document.addEventListener("htmx:afterSettle", function () {
    settling = false;
    if (pending) { var key = pending; pending = null; handleKey(key, null); }
  });
  document.addEventListener("htmx:afterRequest", function () { sending = false; });
  document.addEventListener("htmx:sendError", function () { sending = false; settling = false; });

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
          if (!sending && !settling) { press("unsure-send"); }
        }
      }
      return;
    }
    var dialog = guidelines();
    if (dialog && dialog.open) {
      if (event.key === "g" || event.key === "?") { event.preventDefault(); dialog.close(); }
      return; // Esc is handled by the dialog itself
    }
    var ours = /^([0-9bsug?]|ArrowLeft)$/.test(event.key);
    if (sending || settling) {
      if (ours) {
        event.preventDefault();
        if (settling) { pending = event.key; }
      }
      return;
    }
    handleKey(event.key, event);
  });

  function handleKey(key, event) {
    var prevent = function () { if (event) { event.preventDefault(); } };
    if (key === "ArrowLeft") { key = "b"; }
    if (key === "?") { key = "g"; }
    if (/^[0-9]$/.test(key) || key === "b" || key === "s") {
      if (press(key)) { prevent(); }
    } else if (key === "u") {
      prevent();
      openUnsure();
    } else if (key === "g") {
      prevent();
      toggleGuidelines();
    }
  }
})();
