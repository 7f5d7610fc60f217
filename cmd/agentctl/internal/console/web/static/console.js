// Live updates of the records page: new and changed records arrive as
// server-sent events and are put at the top of the table (or updated in
// place) without a reload.
"use strict";
(function () {
  var live = document.getElementById("live");
  var body = document.getElementById("records");
  if (!live || !body || !window.EventSource) { return; }
  var src = live.getAttribute("data-src") + "&after=" + encodeURIComponent(live.getAttribute("data-after") || "");
  var es = new EventSource(src);
  es.addEventListener("open", function () { live.textContent = "live: new records appear here"; live.className = "live on"; });
  es.addEventListener("error", function () { live.textContent = "live: reconnecting…"; live.className = "live"; });
  es.addEventListener("problem", function (e) { live.textContent = "live: " + JSON.parse(e.data); });
  function cell(tr, text) { var td = document.createElement("td"); td.textContent = text; tr.appendChild(td); return td; }
  es.addEventListener("record", function (e) {
    var r = JSON.parse(e.data);
    // A row is tenant/layer/tool/key (rowID in pages.go): one key has a
    // row per layer.
    var id = r.id || (r.tenant + "/" + (r.layer || "") + "/" + r.tool + "/" + r.key);
    var tr = null;
    body.querySelectorAll("tr[data-id]").forEach(function (row) { if (row.getAttribute("data-id") === id) { tr = row; } });
    var empty = body.querySelector("tr.empty");
    if (empty) { empty.remove(); }
    var fresh = !tr;
    if (fresh) { tr = document.createElement("tr"); tr.setAttribute("data-id", id); }
    tr.textContent = "";
    cell(tr, r.created);
    cell(tr, r.layer || "-").className = "layer";
    cell(tr, r.tool);
    var a = document.createElement("a"); a.href = r.link; a.textContent = r.key;
    cell(tr, "").appendChild(a);
    var s = document.createElement("span"); s.className = "state " + r.state.toLowerCase(); s.textContent = r.state;
    cell(tr, "").appendChild(s);
    cell(tr, String(r.attempts));
    cell(tr, r.session || "-");
    tr.className = "fresh";
    if (fresh) { body.insertBefore(tr, body.firstChild); }
  });
})();
