// golden's keyboard handling for the lead's adjudication screen. Every key is shown on the page;
// the form is a real form, so the screen also works without this script (and without htmx).
//
//   digit  set the final grade                         Enter  record it; htmx swaps in the next one
//   r      write a reason (optional; Enter in it records, Esc leaves it)
//   i      toggle "the guidelines caused this"         v  open the new-guidelines-version form
//   Esc    leave a text field                          g  guidelines (handled by judge.js)
//
// After each decision focus goes back to the screen (not to the next item's reason field, where
// htmx would otherwise restore it), so the next digit chooses a grade again.
//
// While a decision is on its way, keys are dropped (a double press). Once the next item is on
// screen but htmx has not yet wired its form (the settle step, ~20 ms), keys are kept and replayed
// after it, so a fast Enter never submits the form natively (a full page load).
(function () {
  "use strict";
  var sending = false, settling = false, pending = [];
  document.addEventListener("htmx:beforeRequest", function () { sending = true; });
  document.addEventListener("htmx:beforeSwap", function (event) {
    sending = false;
    settling = !!event.detail.shouldSwap;
  });
  document.addEventListener("htmx:afterRequest", function () { sending = false; });
  document.addEventListener("htmx:sendError", function () { sending = false; settling = false; pending = []; });
  document.addEventListener("htmx:afterSettle", function (event) {
    settling = false;
    var r = root();
    if (r && event.detail.target && event.detail.target.id === "adjudication" && !r.querySelector(".message.error")) {
      // (a refused decision keeps its place)
      if (document.activeElement && document.activeElement !== document.body) { document.activeElement.blur(); }
      r.focus({ preventScroll: true });
    }
    var keys = pending;
    pending = [];
    keys.forEach(function (key) { handleKey(key, null); });
  });

  function root() { return document.getElementById("adjudication"); }

  // The guidelines dialog (G, opened by judge.js) opens at its top, not scrolled down to the Close
  // button that showModal focuses: the observer runs once the dialog is open and focused.
  var dialog = document.getElementById("guidelines");
  if (dialog && window.MutationObserver) {
    new MutationObserver(function () { if (dialog.open) { dialog.scrollTop = 0; } })
      .observe(dialog, { attributes: true, attributeFilter: ["open"] });
  }

  function isTyping(el) {
    if (!el || !el.tagName) { return false; }
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT") { return true; }
    return el.tagName === "INPUT" && !/^(radio|checkbox|hidden|submit|button)$/.test(el.type);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (isTyping(target)) {
      if (event.key === "Escape") { event.preventDefault(); target.blur(); }
      else if (event.key === "Enter" && (sending || settling)) { event.preventDefault(); }
      return;
    }
    var dialog = document.getElementById("guidelines");
    if (dialog && dialog.open) { return; }
    if (!root()) { return; }
    if (sending || settling) {
      if (/^([0-9riv]|Enter)$/.test(event.key)) {
        event.preventDefault();
        if (settling) { pending.push(event.key); }
      }
      return;
    }
    if (handleKey(event.key, target)) { event.preventDefault(); }
  });

  // One key's action on the current item; true when the key was used. ``target`` is where the
  // key was pressed (null for a key replayed after the settle step).
  function handleKey(key, target) {
    var r = root();
    if (!r) { return false; }
    var form = r.querySelector("#adjudicate-form");
    if (/^[0-9]$/.test(key)) {
      var radio = r.querySelector('input[name="grade"][value="' + key + '"]');
      if (!radio) { return false; }
      radio.checked = true;
    } else if (key === "Enter") {
      // a focused button or link does its own thing; anywhere else Enter records the decision
      if (!form || (target && target.closest && target.closest("button, a, summary"))) { return false; }
      form.requestSubmit();
    } else if (key === "r") {
      var reason = r.querySelector("#reason");
      if (!reason) { return false; }
      reason.focus();
    } else if (key === "i") {
      var box = r.querySelector("#guidelines-issue");
      if (!box) { return false; }
      box.checked = !box.checked;
    } else if (key === "v") {
      var details = document.getElementById("new-guidelines");
      if (!details) { return false; }
      details.open = true;
      var text = details.querySelector("textarea");
      if (text) { text.focus(); }
    } else {
      return false;
    }
    return true;
  }
})();
