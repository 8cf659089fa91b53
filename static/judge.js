// golden's keyboard handling for the judging page. Every key is shown on the page; every action is
// a real form or link, so the page also works without this script (and without htmx). Letters work
// with Shift and Caps Lock too, digits with Shift.
//
//   digit  label the pair with that grade and move on (htmx swaps in the next pair)
//   b      back to the previous pair          s  skip this pair
//   u      unsure: open the note; Enter ends the note, then a digit sends "unsure" with that grade
//          (the judge's best guess, which a lead confirms or changes); Esc cancels
//   z      undo the last answer (while the pair is still the judge's): the pair is shown again
//   g      show / hide the guidelines         Esc closes them
//   c      compact grades: names only (remembered per judge in this browser)
//   h      mark the query's words in the document, or not (remembered in this browser)
//   n      show / hide the query's information need (remembered per judge in this browser)
//
// An answer is for the pair the judge saw: a key still held down since the last answer, and an
// answering key pressed within twice the project's minimum answer time (data-min-ms) after a pair
// is painted, are ignored; the server refuses what comes sooner than the minimum itself.
(function () {
  "use strict";

  // While a request that replaces the pair is on its way (an answer, Back, Undo: its htmx target
  // is #pair), keys are dropped: they are for a pair not yet on screen (e.g. a double press), and
  // the page says so for a moment (#key-wait). Once the next pair is on screen but htmx has not yet
  // wired its forms (the settle step), a key is kept and replayed, so fast typing never submits
  // natively. While any other request is in flight (the release poll), keys are for the pair on
  // screen: they are kept and applied, in order, once that request has settled (htmx's hx-sync on
  // #pair would drop a request sent meanwhile).
  var sending = false, settling = false, pending = null;
  var others = 0, otherSwaps = 0, queued = [];
  function isPair(event) {
    var target = event.detail && event.detail.target;
    return !!(target && target.id === "pair");
  }
  // The quiet time after a pair is painted, and the keys (by code) not released since they answered.
  var quietUntil = 0, unreleased = {};
  function quietMs() {
    var root = pair();
    return root ? 2 * (parseInt(root.getAttribute("data-min-ms"), 10) || 0) : 0;
  }
  function painted() {
    var now = window.performance.now();
    window.requestAnimationFrame(function () { quietUntil = Math.max(now, window.performance.now()) + quietMs(); });
    quietUntil = now + quietMs();
  }
  document.addEventListener("DOMContentLoaded", painted);
  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.detail.target && event.detail.target.id === "pair") { painted(); }
  });
  document.addEventListener("keyup", function (event) { delete unreleased[event.code || event.key]; });
  window.addEventListener("blur", function () { unreleased = {}; });
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (isPair(event)) { sending = true; } else { others += 1; }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (isPair(event)) {
      sending = false;
      settling = !!event.detail.shouldSwap;
    } else if (event.detail.shouldSwap) {
      otherSwaps += 1;
    }
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!isPair(event)) { otherSwaps = Math.max(0, otherSwaps - 1); window.setTimeout(applyQueued, 0); return; }
    settling = false;
    if (pending) { var key = pending; pending = null; handleKey(key, null); }
  });
  function applyQueued() {
    // The keys kept while another request was in flight, for the pair still on screen; one that
    // sends an answer makes the rest keys for a pair not yet seen (dropped, with the cue).
    if (others > 0 || otherSwaps > 0) { return; }
    while (queued.length && !sending && !settling) { handleKey(queued.shift(), null); }
    if (queued.length) { queued = []; waitCue(); }
  }

  // The brief cue that a key was not used: the pair it was meant for is not on screen yet.
  var cueTimer = null;
  function waitCue() {
    var cue = document.getElementById("key-wait");
    if (!cue) { return; }
    cue.hidden = false;
    window.clearTimeout(cueTimer);
    cueTimer = window.setTimeout(function () { cue.hidden = true; }, 1500);
  }

  // Shift and Caps Lock: "B" is b; Shift with a digit key ("!" on many layouts) is the digit.
  function keyOf(event) {
    var key = event.key;
    if (/^(Digit|Numpad)[0-9]$/.test(event.code || "") && !/^[0-9]$/.test(key) && key.length === 1) {
      key = event.code.slice(-1);
    }
    return key.length === 1 ? key.toLowerCase() : key;
  }
  function answering(key) { return /^[0-9sz]$/.test(key); }
  document.addEventListener("htmx:afterRequest", function (event) {
    if (isPair(event)) { sending = false; return; }
    others = Math.max(0, others - 1);
    window.setTimeout(applyQueued, 0);  // once htmx has let go of the request (its hx-sync lock)
  });
  document.addEventListener("htmx:sendError", function (event) {
    if (isPair(event)) { sending = false; settling = false; }
  });

  // The information need under the query: open or closed as this judge last left it.
  function needKey(details) { return "golden.need." + (details.getAttribute("data-judge") || ""); }
  function applyNeed() {
    var details = document.getElementById("need");
    if (!details) { return; }
    var stored = null;
    try { stored = window.localStorage.getItem(needKey(details)); } catch (e) { /* private mode */ }
    if (stored === "closed") { details.open = false; } else if (stored === "open") { details.open = true; }
  }
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details || details.id !== "need") { return; }
    try { window.localStorage.setItem(needKey(details), details.open ? "open" : "closed"); } catch (e) { /* private */ }
  }, true);
  document.addEventListener("DOMContentLoaded", applyNeed);
  document.addEventListener("htmx:afterSwap", applyNeed);

  document.addEventListener("htmx:afterSwap", function (event) {
    // a new pair on screen clears an earlier error message
    var msg = document.getElementById("messages");
    if (msg && event.detail.target && event.detail.target.id === "pair") { msg.innerHTML = ""; }
  });

  function pair() { return document.getElementById("pair"); }

  var MARKS = "golden.marks";
  function storedMarks() {
    try { return window.localStorage.getItem(MARKS); } catch (e) { return null; }
  }
  if (storedMarks() === "off") { document.documentElement.classList.add("no-marks"); }
  function toggleMarks() {
    var off = document.documentElement.classList.toggle("no-marks");
    try { window.localStorage.setItem(MARKS, off ? "off" : "on"); } catch (e) { /* private mode */ }
  }

  // Compact grades (names only), remembered per judge in this browser.
  function compactKey() { var root = pair(); return "golden.compact." + ((root && root.getAttribute("data-judge")) || ""); }
  function applyCompact() {
    var on = false;
    try { on = window.localStorage.getItem(compactKey()) === "on"; } catch (e) { /* private mode */ }
    document.documentElement.classList.toggle("compact-grades", on);
    var button = document.querySelector("[data-toggle-compact]");
    if (button) { button.setAttribute("aria-pressed", on ? "true" : "false"); }
  }
  function toggleCompact() {
    var on = !document.documentElement.classList.contains("compact-grades");
    try { window.localStorage.setItem(compactKey(), on ? "on" : "off"); } catch (e) { /* private mode */ }
    applyCompact();
  }
  document.addEventListener("DOMContentLoaded", applyCompact);
  document.addEventListener("htmx:afterSwap", applyCompact);

  function guidelines() { return document.getElementById("guidelines"); }

  function toggleGuidelines() {
    var dialog = guidelines();
    if (!dialog || typeof dialog.showModal !== "function") { return false; }
    if (dialog.open) { dialog.close(); return true; }
    dialog.showModal();
    // Open at the top (title and grade table), not scrolled to the Close button showModal focuses.
    var title = dialog.querySelector("h2, h1");
    if (title) { title.setAttribute("tabindex", "-1"); title.focus({ preventScroll: true }); }
    dialog.scrollTop = 0;
    return true;
  }

  // Unsure keeps the pair in view: the note takes the focus without scrolling the page (the panel
  // scrolls inside itself to show it on a wide screen; on a phone the note and its grades are a
  // bar at the bottom, in place of the grade bar: golden.css).
  // The toggle event of a <details> comes in a later task, after input already queued (keys typed
  // fast, or under load): Enter may have ended the note before it fires. A box that "u" opened has its
  // note focused here already, so its toggle event must not take the focus back to the note (the
  // digit that follows would be typed into it, and the answer never sent).
  var keyOpened = null;
  function openUnsure() {
    var details = document.getElementById("unsure");
    if (!details) { return; }
    if (!details.open) { keyOpened = details; }
    details.open = true;
    showNote(details);
  }

  function showNote(details) {
    var note = details.querySelector("textarea");
    if (!note) { return; }
    note.focus({ preventScroll: true });
    var panel = details.closest(".panel");
    if (panel && panel.scrollHeight > panel.clientHeight) {
      var below = details.getBoundingClientRect().bottom - panel.getBoundingClientRect().bottom;
      if (below > 0) { panel.scrollTop += below + 8; }
    }
  }
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details || details.id !== "unsure") { return; }
    if (details === keyOpened) { keyOpened = null; return; }  // "u" opened it and focused the note itself
    if (details.open && document.activeElement && document.activeElement.tagName !== "TEXTAREA") {
      showNote(details);
    }
  }, true);

  function closeUnsure() {
    var details = document.getElementById("unsure");
    if (details) { details.open = false; }
    if (document.activeElement) { document.activeElement.blur(); }
  }

  function unsureOpen() {
    var details = document.getElementById("unsure");
    return !!(details && details.open);
  }

  function doneWithNote(textarea) {
    // The note is written: leave the field, keep the box open, and point at the digits.
    textarea.blur();
    var details = document.getElementById("unsure");
    if (details) { details.classList.add("pick-grade"); }
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
    // A grade tapped on the grade bar while the unsure note is open sends the unsure answer with
    // its note, not a plain grade that would drop the note.
    if (event.target.closest && event.target.closest("[data-unsure-cancel]")) { closeUnsure(); return; }
    if (event.target.closest && event.target.closest("[data-toggle-compact]")) { toggleCompact(); return; }
    var grade = event.target.closest && event.target.closest("form.grade-bar button[name=grade]");
    if (grade && unsureOpen()) {
      var unsure = document.querySelector('#unsure [data-unsure-key="' + grade.value + '"]');
      if (unsure) { event.preventDefault(); unsure.click(); }
    }
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
          doneWithNote(target);
        }
      }
      return;
    }
    var dialog = guidelines();
    if (dialog && dialog.open) {
      if (keyOf(event) === "g" || event.key === "?") { event.preventDefault(); dialog.close(); }
      return; // Esc is handled by the dialog itself
    }
    var key = keyOf(event);
    var ours = /^([0-9bsughnzc?]|ArrowLeft)$/.test(key) || (key === "Escape" && unsureOpen());
    var quiet = quietMs() > 0;
    if (ours && answering(key)) {
      // A key held down since it answered (auto-repeat, or not yet released), or pressed while the
      // next pair has only just been painted, is for the pair before: ignored.
      var code = event.code || event.key;
      if (event.repeat || unreleased[code]) {
        event.preventDefault();
        return;
      }
      if (quiet && window.performance.now() < quietUntil) {
        event.preventDefault();
        waitCue();
        return;
      }
    }
    if (sending || settling) {
      if (ours) {
        event.preventDefault();
        if (settling && !quiet) { pending = key; } else { waitCue(); }
      }
      return;
    }
    if (ours && answering(key)) { unreleased[event.code || event.key] = true; }
    if (others > 0 || otherSwaps > 0) {
      if (ours) {
        event.preventDefault();
        if (queued.length < 8) { queued.push(key); }
      }
      return;
    }
    handleKey(key, event);
  });

  function handleKey(key, event) {
    var prevent = function () { if (event) { event.preventDefault(); } };
    if (key === "ArrowLeft") { key = "b"; }
    if (key === "?") { key = "g"; }
    if (unsureOpen() && (/^[0-9]$/.test(key) || key === "Escape")) {
      prevent();
      if (key === "Escape") { closeUnsure(); return; }
      var el = document.querySelector('#unsure [data-unsure-key="' + key + '"]');
      if (el && !el.disabled) { el.click(); }
    } else if (/^[0-9]$/.test(key) || key === "b" || key === "s" || key === "z") {
      if (press(key)) { prevent(); }
    } else if (key === "u") {
      prevent();
      openUnsure();
    } else if (key === "g") {
      prevent();
      toggleGuidelines();
    } else if (key === "c") {
      prevent();
      toggleCompact();
    } else if (key === "h") {
      prevent();
      toggleMarks();
    } else if (key === "n") {
      var need = document.getElementById("need");
      if (need) { prevent(); need.open = !need.open; }
    }
  }
})();
