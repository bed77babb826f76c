/* Horizon for Django: the dashboard's own script (no framework; htmx does the requests).

   - Live updates: every page part that polls is marked data-poll, and one refresh
     model holds for all of them (see "live updates" below): it holds while the
     pointer, the focus, a selection or a touch is in it, drops a response that lands
     after a hold began, pauses everywhere with "Pause updates", keeps the focus across
     a swap. #live-state says which.
   - Stale data: a poll that fails (an error answer, no answer, a timeout) shows the
     #stale banner with the UTC time of the last good refresh; the next good one hides it.
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

  // -- live updates: one refresh model for every live region ---------------------------
  // A live region is any element marked data-poll (lists, Running now, Locks, the summary
  // pages, a job's page). The same rule holds for all of them:
  //  - it holds while the operator is in it: the pointer on it, the keyboard focus in it,
  //    a text selection in it, a touch on it in the last TOUCH_HOLD ms (phones have no
  //    hover), or ticked rows;
  //  - a response that lands after a hold began is dropped, not swapped (a refresh
  //    already in flight when the pointer arrived must not move the row under it);
  //  - "Updates paused" stops every region, whatever the page;
  //  - success and failure are read before the swap, on the element still in the page
  //    (after an outerHTML swap htmx fires afterRequest on the detached element, which
  //    never reaches document): the stale banner clears on the next good refresh;
  //  - the focus survives a swap (the same control in the new region gets it back).
  var TOUCH_HOLD = 5000;
  var touched = null; // {x, y, at} of the last touch

  function userPaused() { return stored(LIVE_KEY) === "paused"; }

  function under(el, point) {
    if (!point) { return false; }
    var found = document.elementFromPoint(point.x, point.y);
    return !!(found && el.contains(found));
  }

  function keyboardFocus(el) {
    try { return el.matches(":focus-visible"); } catch (e) { return true; }
  }

  function holdReason(el) {
    if (userPaused()) { return "paused"; }
    if ($("input.pick:checked", el) || el.getAttribute("data-scope") === "all") { return "rows are ticked"; }
    if (touched && Date.now() - touched.at < TOUCH_HOLD && under(el, touched)) { return "you touched it"; }
    if (under(el, pointer)) { return "the pointer is on it"; }
    // Keyboard focus (a control focused by a click is covered by the pointer: once the
    // pointer leaves, the region shows what the click changed).
    var active = document.activeElement;
    if (active && active !== document.body && el.contains(active) && keyboardFocus(active)) {
      return "a control in it has the focus";
    }
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
    } else if (staleSince) {
      state.textContent = "Not live: last refresh failed";
      state.className = "live-state stale-state";
    } else {
      state.textContent = "Live";
      state.className = "live-state";
    }
  }

  function isPoll(el) { return el && el.hasAttribute && el.hasAttribute("data-poll"); }
  // A poll is the region's own refresh; an operator's action (a form posting into the
  // region) always goes through and always swaps.
  // Told apart when it is sent (htmx gives later events the target as elt, so a facet
  // link's answer swapping into a list would look like the list's own poll).
  function isPollRequest(detail) {
    if (detail.xhr && detail.xhr.horizonPoll !== undefined) { return detail.xhr.horizonPoll; }
    var verb = (detail.requestConfig && detail.requestConfig.verb) || "get";
    return isPoll(detail.elt) && verb.toLowerCase() === "get";
  }

  document.addEventListener("pointermove", function (event) {
    if (event.pointerType !== "touch") { pointer = {x: event.clientX, y: event.clientY}; }
  }, true);
  document.addEventListener("pointerdown", function (event) {
    if (event.pointerType === "touch") {
      touched = {x: event.clientX, y: event.clientY, at: Date.now()};
    } else {
      pointer = {x: event.clientX, y: event.clientY};
    }
  }, true);
  document.addEventListener("touchstart", function (event) {
    var t = event.touches && event.touches[0];
    if (t) { touched = {x: t.clientX, y: t.clientY, at: Date.now()}; }
  }, {capture: true, passive: true});
  document.documentElement.addEventListener("pointerleave", function (event) {
    if (event.pointerType !== "touch") { pointer = null; }
  });
  window.addEventListener("blur", function () { pointer = null; });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var poll = isPollRequest(event.detail);
    if (event.detail.xhr) { event.detail.xhr.horizonPoll = poll; }
    if (!poll) { return; }
    var reason = holdReason(event.detail.elt);
    showLive(reason);
    if (reason) { event.preventDefault(); }
  });

  var lastGood = new Date();
  var staleSince = null;

  function utcClock(date) {
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(date.getUTCHours()) + ":" + two(date.getUTCMinutes()) + ":" + two(date.getUTCSeconds()) + " UTC";
  }

  function stale(message) {
    staleSince = staleSince || new Date();
    var banner = $("#stale");
    if (banner) {
      $(".stale-text", banner).textContent = "Could not refresh: " + message +
        " What you see is from " + utcClock(lastGood) + "; it refreshes again on its own.";
      banner.hidden = false;
    }
    $all("[data-poll]").forEach(function (el) { el.classList.add("is-stale"); });
    showLive("");
  }

  function fresh() {
    lastGood = new Date();
    staleSince = null;
    var banner = $("#stale");
    if (banner) { banner.hidden = true; }
    $all("[data-poll]").forEach(function (el) { el.classList.remove("is-stale"); });
  }

  // The focused control, as something that finds it again in the region's new HTML:
  // its id, else what names it (aria-label, data-value, name and value, or its text).
  // Nothing found: the focus is not moved to some other control.
  var NAMING = ["aria-label", "data-value", "data-key", "name", "value", "href"];

  function focusKey(region) {
    var active = document.activeElement;
    if (!active || active === document.body || !region.contains(active)) { return null; }
    if (active.id) { return {id: active.id}; }
    var key = {tag: active.tagName.toLowerCase(), text: (active.textContent || "").trim()};
    NAMING.forEach(function (name) { key[name] = active.getAttribute(name); });
    return key;
  }

  function refocus(region, key) {
    if (!key || !region || region.contains(document.activeElement)) { return; }
    var target = null;
    if (key.id) {
      target = document.getElementById(key.id);
      if (target && !region.contains(target)) { target = null; }
    } else {
      target = $all(key.tag, region).filter(function (el) {
        return NAMING.every(function (name) { return el.getAttribute(name) === key[name]; }) &&
          (el.textContent || "").trim() === key.text;
      })[0] || null;
    }
    if (target && target.focus) { target.focus({preventScroll: true}); }
  }

  var pendingFocus = null; // {id, key}: the focus to give back once the new region is in

  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var target = detail.target;
    if (isPollRequest(detail)) {
      var xhr = detail.xhr;
      if (xhr && xhr.status >= 200 && xhr.status < 300) {
        fresh();
        var reason = holdReason(target);
        if (reason) { // the hold began while this response was on its way: drop it
          detail.shouldSwap = false;
          showLive(reason);
          return;
        }
      }
    }
    if (target && target.id && detail.shouldSwap) {
      pendingFocus = {id: target.id, key: focusKey(target)};
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    if (!pendingFocus) { return; }
    var region = document.getElementById(pendingFocus.id);
    refocus(region, pendingFocus.key);
    pendingFocus = null;
  });

  document.addEventListener("htmx:responseError", function (event) {
    if (!isPollRequest(event.detail)) { return; }
    var xhr = event.detail.xhr;
    var why = xhr && xhr.getResponseHeader("X-Horizon-Unavailable");
    stale(why ? why + "." : "the server answered " + (xhr ? xhr.status : "nothing") + ".");
  });
  document.addEventListener("htmx:sendError", function (event) {
    if (isPollRequest(event.detail)) { stale("the dashboard did not answer (network error)."); }
  });
  document.addEventListener("htmx:timeout", function (event) {
    if (isPollRequest(event.detail)) { stale("the dashboard did not answer within 30 s."); }
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
      count.textContent = all ? ("All " + matchingText(list) + " matching selected.")
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

  // "33,334", or "1,000+" where a text search counted only up to its cap.
  function matchingText(list) {
    var matching = parseInt(list.getAttribute("data-matching") || "0", 10);
    return matching.toLocaleString() + (list.hasAttribute("data-matching-more") ? "+" : "");
  }

  // A bulk form's question, built from what is ticked when it is sent.
  function selectionQuestion(form) {
    var list = listOf(form);
    var verb = form.getAttribute("data-verb") || "Act on";
    var noun = form.getAttribute("data-noun") || "job";
    if (list.getAttribute("data-scope") === "all") {
      var matching = parseInt(list.getAttribute("data-matching") || "0", 10);
      return verb + " all " + matchingText(list) + " " + noun + (matching === 1 ? "" : "s") +
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
