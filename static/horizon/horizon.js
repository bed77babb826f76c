/* Horizon for Django: the dashboard's own script (no framework; htmx does the requests).

   - Live updates: every page part that polls (hx-trigger="every 2s") is marked
     data-poll. A poll is skipped while a text selection is inside it, and while the
     operator has paused updates with the toggle; a job list (data-poll="list") also
     holds while the pointer or the keyboard focus is in it, or a row is ticked.
     #live-state says which.
   - Stale data: a poll that fails (an error answer, no answer, a timeout) shows the
     #stale banner with the time of the last good refresh; the next good one hides it.
   - Confirms: forms with data-confirm-selection build their question from the ticked
     rows (each row names its job: name, uuid, queue), or from "all N matching".
   - Selection: row checkboxes, a page checkbox and "select all N matching".
   - Keyboard: j/k next and previous row, o/Enter open, / search, r retry, d delete,
     x tick, p pause updates, ? help.
   - Theme: follows the system, with a toggle remembered in localStorage.
*/
(function () {
  "use strict";

  var LIVE_KEY = "horizon:live";
  var THEME_KEY = "horizon:theme";
  var pointer = null; // last pointer position in this document, or null when it left
  var lastGood = new Date();

  function $(selector, root) { return (root || document).querySelector(selector); }
  function $all(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }

  function store(key, value) {
    try { if (value === null) { localStorage.removeItem(key); } else { localStorage.setItem(key, value); } } catch (e) { /* private mode */ }
  }
  function stored(key) { try { return localStorage.getItem(key); } catch (e) { return null; } }

  // -- theme -------------------------------------------------------------------------
  function applyTheme() {
    var theme = stored(THEME_KEY);
    if (theme === "dark" || theme === "light") {
      document.documentElement.setAttribute("data-theme", theme);
    } else {
      document.documentElement.removeAttribute("data-theme");
    }
    var button = $("#theme-toggle");
    if (button) {
      var dark = effectiveDark();
      button.setAttribute("aria-pressed", dark ? "true" : "false");
      button.textContent = dark ? "Light mode" : "Dark mode";
    }
  }
  function effectiveDark() {
    var theme = stored(THEME_KEY);
    if (theme) { return theme === "dark"; }
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }
  applyTheme();

  // -- live updates --------------------------------------------------------------------
  function userPaused() { return stored(LIVE_KEY) === "paused"; }

  function holdReason(el) {
    if (userPaused()) { return "paused"; }
    if ($("input.pick:checked", el) || el.getAttribute("data-scope") === "all") { return "rows are ticked"; }
    // Job lists hold for the pointer and the focus too: their rows move under them.
    // Summary pages (overview, workers, schedules) keep refreshing under the pointer.
    var list = el.getAttribute("data-poll") === "list";
    if (list && pointer) {
      var under = document.elementFromPoint(pointer.x, pointer.y);
      if (under && el.contains(under)) { return "the pointer is on it"; }
    }
    var active = document.activeElement;
    if (list && active && active !== document.body && el.contains(active)) { return "a control in it has the focus"; }
    var selection = window.getSelection ? window.getSelection() : null;
    if (selection && !selection.isCollapsed && selection.anchorNode && el.contains(selection.anchorNode)) {
      return "text in it is selected";
    }
    return "";
  }

  function showLive(reason) {
    var state = $("#live-state");
    var toggle = $("#live-toggle");
    if (toggle) {
      toggle.textContent = userPaused() ? "Resume updates" : "Pause updates";
      toggle.setAttribute("aria-pressed", userPaused() ? "true" : "false");
    }
    if (!state) { return; }
    if (userPaused()) {
      state.textContent = "Updates paused";
      state.className = "live-state held";
    } else if (reason) {
      state.textContent = "Held: " + reason;
      state.className = "live-state held";
    } else {
      state.textContent = "Live";
      state.className = "live-state";
    }
  }

  function isPoll(el) { return el && el.hasAttribute && el.hasAttribute("data-poll"); }

  document.addEventListener("pointermove", function (event) { pointer = {x: event.clientX, y: event.clientY}; }, true);
  document.addEventListener("pointerdown", function (event) { pointer = {x: event.clientX, y: event.clientY}; }, true);
  document.documentElement.addEventListener("pointerleave", function () { pointer = null; });
  window.addEventListener("blur", function () { pointer = null; });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var el = event.detail.elt;
    if (!isPoll(el)) { return; }
    var reason = holdReason(el);
    showLive(reason);
    if (reason) { event.preventDefault(); }
  });

  function stale(message) {
    var banner = $("#stale");
    if (!banner) { return; }
    var when = lastGood.toLocaleTimeString();
    $(".stale-text", banner).textContent = "Could not refresh: " + message +
      " What you see is from " + when + ".";
    banner.hidden = false;
    $all("[data-poll]").forEach(function (el) { el.classList.add("is-stale"); });
  }

  function fresh() {
    lastGood = new Date();
    var banner = $("#stale");
    if (banner) { banner.hidden = true; }
    $all("[data-poll]").forEach(function (el) { el.classList.remove("is-stale"); });
  }

  document.addEventListener("htmx:afterRequest", function (event) {
    if (!isPoll(event.detail.elt)) { return; }
    var xhr = event.detail.xhr;
    if (event.detail.successful) { fresh(); return; }
    if (!xhr || !xhr.status) { return; } // handled by sendError/timeout
    var why = xhr.getResponseHeader("X-Horizon-Unavailable");
    stale(why ? why + "." : "the server answered " + xhr.status + ".");
  });
  document.addEventListener("htmx:sendError", function (event) {
    if (isPoll(event.detail.elt)) { stale("the dashboard did not answer (network error)."); }
  });
  document.addEventListener("htmx:timeout", function (event) {
    if (isPoll(event.detail.elt)) { stale("the dashboard took too long to answer."); }
  });

  // -- selection -------------------------------------------------------------------------
  function listOf(el) { return el.closest("[data-poll]"); }

  function refreshSelection(list) {
    if (!list) { return; }
    var picks = $all("input.pick", list);
    var ticked = picks.filter(function (p) { return p.checked; });
    var all = list.getAttribute("data-scope") === "all";
    var bar = $(".selection-bar", list);
    var pageBox = $("input.pick-page", list);
    if (pageBox) {
      pageBox.checked = picks.length > 0 && ticked.length === picks.length;
      pageBox.indeterminate = ticked.length > 0 && ticked.length < picks.length;
    }
    picks.forEach(function (p) { var row = p.closest("tr"); if (row) { row.classList.toggle("selected", p.checked); } });
    if (!bar) { return; }
    bar.hidden = ticked.length === 0 && !all;
    var count = $(".selection-count", bar);
    var matching = parseInt(list.getAttribute("data-matching") || "0", 10);
    if (count) {
      count.textContent = all ? ("All " + matching.toLocaleString() + " matching selected.")
        : (ticked.length + " selected" + (ticked.length === picks.length ? " (this page)." : "."));
    }
    var more = $(".select-all", bar);
    if (more) { more.hidden = all || ticked.length !== picks.length || matching <= picks.length; }
    var clear = $(".select-none", bar);
    if (clear) { clear.hidden = !all; }
    $all("input[name=scope]", list).forEach(function (input) { input.value = all ? "all" : "picked"; });
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (!target.classList) { return; }
    var list = listOf(target);
    if (target.classList.contains("pick-page")) {
      $all("input.pick", list).forEach(function (p) { p.checked = target.checked; });
      if (!target.checked) { list.removeAttribute("data-scope"); }
      refreshSelection(list);
    } else if (target.classList.contains("pick")) {
      if (!target.checked) { list.removeAttribute("data-scope"); }
      refreshSelection(list);
    }
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target.id === "live-toggle") {
      store(LIVE_KEY, userPaused() ? null : "paused");
      showLive("");
      return;
    }
    if (target.id === "theme-toggle") {
      store(THEME_KEY, effectiveDark() ? "light" : "dark");
      applyTheme();
      return;
    }
    if (target.id === "help-close") { toggleHelp(false); return; }
    if (target.classList && target.classList.contains("select-all")) {
      event.preventDefault();
      var list = listOf(target);
      $all("input.pick", list).forEach(function (p) { p.checked = true; });
      list.setAttribute("data-scope", "all");
      refreshSelection(list);
    } else if (target.classList && target.classList.contains("select-none")) {
      event.preventDefault();
      var list2 = listOf(target);
      $all("input.pick", list2).forEach(function (p) { p.checked = false; });
      list2.removeAttribute("data-scope");
      refreshSelection(list2);
    }
  });

  // A bulk form's question, built from what is ticked when it is sent.
  function selectionQuestion(form) {
    var list = listOf(form);
    var verb = form.getAttribute("data-verb") || "Act on";
    var noun = form.getAttribute("data-noun") || "job";
    if (list.getAttribute("data-scope") === "all") {
      var matching = parseInt(list.getAttribute("data-matching") || "0", 10);
      return verb + " all " + matching.toLocaleString() + " " + noun + (matching === 1 ? "" : "s") +
        (list.getAttribute("data-filter-note") || "") + "?" + (form.getAttribute("data-warning") || "");
    }
    var ticked = $all("input.pick:checked", list);
    if (!ticked.length) { return ""; }
    var lines = ticked.slice(0, 12).map(function (p) {
      return "• " + p.getAttribute("data-name") + " (" + p.getAttribute("data-uuid") + ") on " + p.getAttribute("data-queue");
    });
    if (ticked.length > 12) { lines.push("… and " + (ticked.length - 12) + " more"); }
    return verb + " " + ticked.length + " " + noun + (ticked.length === 1 ? "" : "s") + "?" +
      (form.getAttribute("data-warning") || "") + "\n\n" + lines.join("\n");
  }

  document.addEventListener("htmx:confirm", function (event) {
    var form = event.detail.elt;
    if (!form.hasAttribute || !form.hasAttribute("data-confirm-selection")) { return; }
    event.preventDefault();
    var question = selectionQuestion(form);
    if (!question) { window.alert("Tick the jobs to act on first."); return; }
    if (window.confirm(question)) { event.detail.issueRequest(true); }
  });

  // -- keyboard --------------------------------------------------------------------------
  var cursor = -1;

  function rows() {
    var list = $("[data-poll] table.rows");
    return list ? $all("tbody tr[data-uuid]", list) : [];
  }

  function mark(index) {
    var all = rows();
    if (!all.length) { cursor = -1; return; }
    cursor = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) { row.classList.toggle("cursor", i === cursor); });
    var row = all[cursor];
    row.scrollIntoView({block: "nearest"});
    var link = $("td.job a", row);
    if (link) { link.focus({preventScroll: true}); }
  }

  function current() { var all = rows(); return cursor >= 0 ? all[cursor] : null; }

  function toggleHelp(show) {
    var help = $("#keys-help");
    if (help) { help.hidden = show === undefined ? !help.hidden : !show; }
  }

  function press(row, selector) {
    var button = row && $(selector, row);
    if (button) { button.click(); }
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    var tag = target && target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable)) {
      if (event.key === "Escape" && target.blur) { target.blur(); }
      return;
    }
    switch (event.key) {
      case "j": mark(cursor + 1); break;
      case "k": mark(cursor < 0 ? 0 : cursor - 1); break;
      case "o": case "Enter":
        if (cursor < 0) { return; }
        var link = $("td.job a", current());
        if (link) { link.click(); }
        break;
      case "/":
        var search = $("#filter-q");
        if (search) { search.focus(); search.select(); }
        break;
      case "x":
        var pick = current() && $("input.pick", current());
        if (pick) { pick.checked = !pick.checked; refreshSelection(listOf(pick)); }
        break;
      case "r": press(current(), "button[data-key=retry]"); break;
      case "d": press(current(), "button[data-key=delete]"); break;
      case "p": var toggle = $("#live-toggle"); if (toggle) { toggle.click(); } break;
      case "?": toggleHelp(); break;
      case "Escape": toggleHelp(false); break;
      default: return;
    }
    event.preventDefault();
  });

  // After a swap the rows are new elements: keep the cursor where it was, and the selection state.
  document.addEventListener("htmx:afterSwap", function () {
    if (cursor >= 0) {
      var all = rows();
      all.forEach(function (row, i) { row.classList.toggle("cursor", i === cursor); });
    }
    $all("[data-poll]").forEach(refreshSelection);
    showLive("");
  });

  document.addEventListener("DOMContentLoaded", function () {
    applyTheme();
    showLive("");
    $all("[data-poll]").forEach(refreshSelection);
  });
})();
