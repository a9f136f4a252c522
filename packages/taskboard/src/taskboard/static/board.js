// agent-task board: progressive enhancement only. Every page works without this file.
// A page whose live region (#live) names the events it shows (data-events, a query string for
// /board/events) listens to the event stream and re-fetches the region when one arrives; any
// other page (or one whose stream is refused or lost for good) re-fetches it every few
// seconds while the tab is visible. The region is swapped in when it changed, unless the
// operator is typing in it. The server renders and escapes everything; this file never
// builds HTML from data.
(function () {
  "use strict";
  var POLL_MS = 3000;
  var QUIET_MS = 250;    // events that come together refresh once
  var live = document.getElementById("live");
  if (!live || !window.fetch) { return; }
  var main = document.querySelector("main");
  var base = main ? (main.getAttribute("data-base") || "") : "";
  var busy = false, again = false, timer = null, poller = null;
  function editing() {
    var a = document.activeElement;
    return a && live.contains(a) && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT");
  }
  var settled = [];  // called once the region is current (after the look in flight, if any)
  function flush() {
    var calls = settled;
    settled = [];
    calls.forEach(function (call) { call(); });
  }
  function refresh(then) {
    if (then) { settled.push(then); }
    if (busy) { again = true; return; }
    if (document.hidden || editing()) { flush(); return; }
    busy = true;
    fetch(window.location.href, { headers: { "X-Board-Live": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 401) { window.location.reload(); return null; }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined && html !== live.innerHTML && !editing()) {
          live.innerHTML = html;
          live.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () { /* the next event or tick tries again */ })
      .then(function () {
        busy = false;
        if (again) { again = false; soon(); } else { flush(); }
      });
  }
  function soon() {
    if (timer !== null) { return; }
    timer = window.setTimeout(function () { timer = null; refresh(); }, QUIET_MS);
  }
  function poll() {
    if (poller === null) { poller = window.setInterval(function () { refresh(); }, POLL_MS); }
    live.setAttribute("data-live-mode", "poll");
  }
  var wanted = live.getAttribute("data-events");
  if (wanted === null || !window.EventSource) {
    poll();
  } else {
    var source = new EventSource(base + "/events" + (wanted ? "?" + wanted : ""));
    // The stream starts where the log stands when it opens, which is after the page was
    // rendered: what committed in between comes with no event, so the region is looked at
    // once on each opening, and the page says "stream" when that look has landed.
    source.onopen = function () {
      refresh(function () { live.setAttribute("data-live-mode", "stream"); });
    };
    source.onmessage = soon;
    source.onerror = function () {
      // The browser reconnects by itself (with Last-Event-ID); a refused stream is closed.
      if (source.readyState === EventSource.CLOSED) { poll(); }
    };
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { refresh(); } });
})();
