// Draws every chart on a page: a <canvas data-chart="ID"> whose data sits in <script type="application/json" id="ID">
// as {title, label, labels, values, kinds, scale?: "logarithmic"}. Data is never interpolated into a script, and
// without JavaScript the page's tables show the same numbers.
(function () {
  "use strict";

  var COLORS = { "public": "#1f5fa8", baseline: "#8a94a0", "private": "#c07a1a" };
  var BAR_PX = 28;
  var CHAR_PX = 18; // labels get about a third of the chart's width

  function shortLabel(text, maxChars) {
    text = String(text);
    return text.length > maxChars ? text.slice(0, maxChars - 1) + "…" : text;
  }

  function logAxis() {
    // Label the powers of ten only: the default labels of a log axis crowd and rotate on narrow screens.
    return {
      type: "logarithmic",
      ticks: {
        maxRotation: 0,
        callback: function (value) {
          var exponent = Math.log10(value);
          return Math.abs(exponent - Math.round(exponent)) < 1e-9 ? String(Number(value)) : "";
        },
      },
    };
  }

  function draw(canvas) {
    var source = document.getElementById(canvas.getAttribute("data-chart"));
    if (!source) return;
    var spec = JSON.parse(source.textContent);
    // Horizontal bars: long system names stay readable on a phone; the box grows with the number of bars.
    canvas.parentNode.style.height = spec.labels.length * BAR_PX + 48 + "px";
    var maxChars = Math.max(10, Math.min(32, Math.floor(canvas.parentNode.clientWidth / CHAR_PX)));
    new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: spec.labels,
        datasets: [{
          label: spec.label,
          data: spec.values,
          backgroundColor: spec.kinds.map(function (kind) { return COLORS[kind] || COLORS["public"]; }),
        }],
      },
      options: {
        indexAxis: "y",
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              title: function (items) { return spec.labels[items[0].dataIndex]; },
              label: function (item) { return spec.label + ": " + item.parsed.x.toPrecision(4); },
            },
          },
        },
        scales: {
          x: spec.scale === "logarithmic" ? logAxis() : { beginAtZero: true },
          y: { ticks: { autoSkip: false, callback: function (value) { return shortLabel(spec.labels[value], maxChars); } } },
        },
      },
    });
  }

  function drawAll() {
    if (typeof window.Chart === "undefined") return;
    var canvases = document.querySelectorAll("canvas[data-chart]");
    for (var i = 0; i < canvases.length; i++) draw(canvases[i]);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();
