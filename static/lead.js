// golden's keyboard handling for the lead's adjudication screen. Every key is shown on the page;
// the form is a real form, so the screen also works without this script (and without htmx).
//
//   digit  set the final grade and move to the reason field
//   Enter  (in the reason field) record the final label; htmx swaps in the next disagreement
//   i      toggle "the guidelines caused this"       v  open the new-guidelines-version form
//   Esc    leave a text field                          g  guidelines (handled by judge.js)
(function () {
  "use strict";
  var busy = false;
  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });

  function root() { return document.getElementById("adjudication"); }

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
    if (!r || busy) { return; }
    if (/^[0-9]$/.test(event.key)) {
      var radio = r.querySelector('input[name="grade"][value="' + event.key + '"]');
      if (!radio) { return; }
      event.preventDefault();
      radio.checked = true;
      var reason = r.querySelector("#reason");
      if (reason) { reason.focus(); }
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
