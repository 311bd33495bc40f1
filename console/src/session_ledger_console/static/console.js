// The console's one script (no inline script anywhere: the Content-Security-Policy forbids it).
// It listens to the audit head as Server-Sent Events (/events) and, when the head moves (a
// change anywhere: this console, the command line in another process, another node), fires
// `ledger-changed` on the body; the parts of the page that show the ledger reload themselves
// on that event through htmx (`hx-trigger="ledger-changed from:body"`).
(function () {
  "use strict";
  var live = document.getElementById("live");
  var head = document.body.getAttribute("data-head");
  if (!window.EventSource || !live) {
    return;
  }
  var source = new EventSource("/events");
  source.addEventListener("open", function () {
    live.textContent = "live";
    live.className = "live on";
  });
  source.addEventListener("error", function () {
    live.textContent = "reconnecting";
    live.className = "live off";
  });
  source.addEventListener("head", function (event) {
    if (event.data !== head) {
      head = event.data;
      document.body.setAttribute("data-head", head);
      htmx.trigger(document.body, "ledger-changed");
    }
  });
  window.addEventListener("pagehide", function () {
    source.close();
  });
})();
