// The Stats page's charts over time: each chart's series come from
// /stats/series (the range in the page's link) and are drawn with uPlot;
// the page asks again every data-poll milliseconds and redraws in place.
// window.mcpledgerCharts holds each chart's uPlot by id, for tests.
"use strict";
(function () {
  var box = document.getElementById("charts");
  if (!box || !window.uPlot || !window.fetch) { return; }
  var live = document.getElementById("charts-live");
  var partial = document.getElementById("charts-partial");
  var charts = window.mcpledgerCharts = {};
  var palette = ["#2f5bd3", "#1f8a4c", "#b4237a", "#d9822b", "#7a4fd3", "#0f8f9e", "#b42323", "#6b7a2e", "#3a4457", "#c79a00", "#8a1660", "#4b5566"];

  function fmt(unit) {
    return function (u, v) {
      if (v == null) { return "-"; }
      if (v === 0) { return "0"; }
      if (unit === "share") { return (100 * v).toFixed(1) + "%"; }
      if (unit === "seconds") {
        if (v >= 86400) { return (v / 86400).toFixed(1) + "d"; }
        if (v >= 3600) { return (v / 3600).toFixed(1) + "h"; }
        if (v >= 60) { return (v / 60).toFixed(1) + "m"; }
        if (v >= 1) { return v.toFixed(1) + "s"; }
        return (v * 1000).toFixed(v < 0.001 ? 2 : 0) + "ms";
      }
      return String(Math.round(v * 100) / 100);
    };
  }

  function axisValues(unit) {
    var f = fmt(unit);
    return function (u, splits) { return splits.map(function (v) { return f(u, v); }); };
  }

  function optsFor(c, width) {
    var series = [{}];
    c.series.forEach(function (s, i) {
      series.push({ label: s.label, stroke: palette[i % palette.length], width: 2, spanGaps: false,
        points: { show: true, size: 4 }, value: fmt(c.unit) });
    });
    return {
      width: width, height: 220, series: series,
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      axes: [{}, { values: axisValues(c.unit), size: 60 }],
      legend: { live: true },
    };
  }

  function dataFor(tl, c) {
    var d = [tl.x];
    c.series.forEach(function (s) { d.push(s.values); });
    return d;
  }

  function labels(c) { return c.series.map(function (s) { return s.label; }).join("\u0000"); }

  function draw(tl) {
    tl.charts.forEach(function (c) {
      var fig = document.getElementById("chart-" + c.id);
      if (!fig) {
        fig = document.createElement("figure");
        fig.id = "chart-" + c.id;
        fig.setAttribute("data-chart", c.id);
        var cap = document.createElement("figcaption");
        cap.textContent = c.title;
        fig.appendChild(cap);
        box.appendChild(fig);
      }
      var u = charts[c.id];
      var empty = fig.querySelector(".empty");
      if (c.series.length === 0) {
        if (u) { u.destroy(); delete charts[c.id]; }
        if (!empty) { empty = document.createElement("p"); empty.className = "empty"; empty.textContent = "No calls in this range."; fig.appendChild(empty); }
        return;
      }
      if (empty) { empty.remove(); }
      // A new tool or outcome is a new series: draw the chart anew.
      if (u && u.mcpledgerLabels !== labels(c)) { u.destroy(); u = null; }
      if (!u) {
        u = new window.uPlot(optsFor(c, Math.max(fig.clientWidth - 24, 320)), dataFor(tl, c), fig);
        u.mcpledgerLabels = labels(c);
        charts[c.id] = u;
      } else {
        u.setData(dataFor(tl, c));
      }
    });
    if (partial) { partial.hidden = !tl.partial; }
    box.setAttribute("data-drawn", String(tl.x[tl.x.length - 1]));
  }

  function load() {
    return fetch(box.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status + " " + r.statusText); } return r.json(); })
      .then(function (tl) { draw(tl); if (live) { live.textContent = "live"; live.className = "live on"; } })
      .catch(function (e) { if (live) { live.textContent = "live: " + e.message + ", trying again"; live.className = "live"; } });
  }
  load();
  var every = parseInt(box.getAttribute("data-poll"), 10) || 5000;
  setInterval(load, every);
})();
