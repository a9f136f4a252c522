// agent-task board: progressive enhancement only. Every page works without this file.
// While the tab is visible, re-fetch the page's live region (#live) every few seconds and
// swap it in when it changed, unless the operator is typing in it. The server renders and
// escapes everything; this file never builds HTML from data.
(function () {
  "use strict";
  var INTERVAL_MS = 3000;
  var live = document.getElementById("live");
  if (!live || !window.fetch) { return; }
  var busy = false;
  function editing() {
    var a = document.activeElement;
    return a && live.contains(a) && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT");
  }
  function refresh() {
    if (busy || document.hidden || editing()) { return; }
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
      .catch(function () { /* the next tick tries again */ })
      .then(function () { busy = false; });
  }
  window.setInterval(refresh, INTERVAL_MS);
  document.addEventListener("visibilitychange", refresh);
})();
