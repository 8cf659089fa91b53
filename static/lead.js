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
(function () {
  "use strict";
  var busy = false;
  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("htmx:afterSettle", function (event) {
    var r = root();
    if (!r || !event.detail.target || event.detail.target.id !== "adjudication") { return; }
    if (r.querySelector(".message.error")) { return; }  // a refused decision keeps its place
    if (document.activeElement && document.activeElement !== document.body) { document.activeElement.blur(); }
    r.focus({ preventScroll: true });
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
      else if (event.key === "Enter" && busy) { event.preventDefault(); }
      return;
    }
    var dialog = document.getElementById("guidelines");
    if (dialog && dialog.open) { return; }
    var r = root();
    if (!r) { return; }
    if (busy) {
      if (/^([0-9ri]|Enter)$/.test(event.key)) { event.preventDefault(); }
      return;
    }
    var form = r.querySelector("#adjudicate-form");
    if (/^[0-9]$/.test(event.key)) {
      var radio = r.querySelector('input[name="grade"][value="' + event.key + '"]');
      if (!radio) { return; }
      event.preventDefault();
      radio.checked = true;
    } else if (event.key === "Enter") {
      // a focused button or link does its own thing; anywhere else Enter records the decision
      if (!form || (target.closest && target.closest("button, a, summary"))) { return; }
      event.preventDefault();
      form.requestSubmit();
    } else if (event.key === "r") {
      var reason = r.querySelector("#reason");
      if (reason) { event.preventDefault(); reason.focus(); }
    } else if (event.key === "i") {
      var box = r.querySelector("#guidelines-issue");
      if (box) { event.preventDefault(); box.checked = !box.checked; }
    } else if (event.key === "v") {
      var details = document.getElementById("new-guidelines");
      if (details) {
        event.preventDefault();
        details.open = true;
        var text = details.querySelector("textarea");
        if (text) { text.focus(); }
      }
    }
  });
})();
