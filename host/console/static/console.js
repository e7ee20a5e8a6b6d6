// Progressive enhancement only: every page works without this file.
"use strict";

// Infinite scroll: a "more" link with data-fragment loads the next rows when it comes into view.
function moreRows(link) {
  if (link.dataset.loading) return;
  link.dataset.loading = "1";
  fetch(link.dataset.fragment, { credentials: "same-origin" })
    .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
    .then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var target = document.getElementById(link.dataset.target);
      doc.querySelectorAll("tbody > tr").forEach(function (tr) { target.appendChild(document.adoptNode(tr)); });
      var next = doc.querySelector("a.more");
      if (next) {
        link.href = next.getAttribute("href");
        link.dataset.fragment = next.dataset.fragment;
        delete link.dataset.loading;
      } else {
        link.remove();
      }
    })
    .catch(function () { delete link.dataset.loading; });
}

function watchMore() {
  var links = document.querySelectorAll("a.more[data-fragment]");
  if (!links.length || !("IntersectionObserver" in window)) return;
  var io = new IntersectionObserver(function (seen) {
    seen.forEach(function (e) { if (e.isIntersecting) moreRows(e.target); });
  });
  links.forEach(function (a) { io.observe(a); });
}

// Live bus: server-sent events become table rows (text only, never HTML).
function watchBus() {
  var body = document.getElementById("live");
  if (!body || !window.EventSource) return;
  var state = document.getElementById("live-state");
  var source = new EventSource(body.dataset.stream);
  source.onopen = function () { state.textContent = "Connected: waiting for events…"; };
  source.onerror = function () { state.textContent = "Disconnected: retrying…"; };
  source.addEventListener("bus", function (ev) {
    var d = JSON.parse(ev.data);
    var tr = document.createElement("tr");
    [d.at.slice(11, 19) || "", d.type, d.about, d.subject, d.id].forEach(function (text) {
      var td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    });
    body.insertBefore(tr, body.firstChild);
    while (body.children.length > 200) body.removeChild(body.lastChild);
    state.textContent = "Live: " + body.children.length + " event(s) shown";
  });
}

document.addEventListener("DOMContentLoaded", function () { watchMore(); watchBus(); });
