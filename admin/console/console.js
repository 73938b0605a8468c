// ringwal console: refreshes the element #live of a page that has one
// (the overview) in place, every data-refresh seconds. Without JavaScript
// the page refreshes itself (a <noscript> meta refresh).
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.fetch || !window.DOMParser) return;
  var every = Number(live.getAttribute("data-refresh")) * 1000;
  if (!(every > 0)) return;
  function status(text) {
    var s = document.getElementById("refresh-status");
    if (s) s.textContent = text;
  }
  function tick() {
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (!fresh) throw new Error("no overview in the answer");
        live.replaceWith(fresh);
        live = fresh;
      })
      .catch(function (e) { status("refresh failed (" + e.message + "); retrying"); })
      .then(function () { window.setTimeout(tick, every); });
  }
  window.setTimeout(tick, every);
})();
