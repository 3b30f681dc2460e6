// Draws every chart on a page: a <canvas data-chart="ID"> whose data sits in <script type="application/json" id="ID">
// as {title, label, labels, values, kinds, scale?: "logarithmic"}. Data is never interpolated into a script, and
// without JavaScript the page's tables show the same numbers.
// Optional (human evaluation): colors (one per bar, instead of kinds), errors ([low, high] or null per bar: drawn
// as whiskers), min / max (value axis), reference (a dashed line at that value), percent (values are shares 0-1),
// integer (counts: whole-number ticks), value_labels (each bar's value written beside it).
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

  function formatValue(spec, value) {
    return spec.percent ? (100 * value).toFixed(1) + "%" : Number(value).toPrecision(4);
  }

  function bounded(error) {
    // An interval may be open on one side ([null, x] from IRT fits): such a one is neither drawn nor quoted.
    return !!error && error[0] !== null && error[0] !== undefined && error[1] !== null && error[1] !== undefined;
  }

  function tooltipLabel(spec, index, value) {
    var text = spec.label + ": " + formatValue(spec, value);
    var error = spec.errors && spec.errors[index];
    if (bounded(error)) text += " (interval " + formatValue(spec, error[0]) + " to " + formatValue(spec, error[1]) + ")";
    return text;
  }

  function valueAxis(spec) {
    var axis = { beginAtZero: true };
    if (spec.min !== undefined) axis.min = spec.min;
    if (spec.max !== undefined) axis.max = spec.max;
    // Whiskers reaching past the bars widen the axis, so no interval is drawn over the labels or cut off.
    var drawn = (spec.errors || []).filter(bounded);
    if (drawn.length) {
      axis.suggestedMin = Math.min.apply(null, drawn.map(function (error) { return error[0]; }));
      axis.suggestedMax = Math.max.apply(null, drawn.map(function (error) { return error[1]; }));
    }
    if (spec.percent) axis.ticks = { callback: function (value) { return Math.round(100 * value) + "%"; } };
    if (spec.integer) axis.ticks = { precision: 0 };
    return axis;
  }

  function whiskers(spec) {
    // An interval as a horizontal line with end caps across each bar (Chart.js has no error bars of its own).
    return {
      id: "whiskers",
      afterDatasetsDraw: function (chart) {
        if (!spec.errors) return;
        var x = chart.scales.x, bars = chart.getDatasetMeta(0).data, ctx = chart.ctx;
        ctx.save();
        ctx.strokeStyle = "#1d232a";
        ctx.lineWidth = 1.5;
        spec.errors.forEach(function (error, i) {
          if (!bounded(error) || !bars[i]) return;
          var y = bars[i].y, cap = Math.min(6, bars[i].height / 3), lo = x.getPixelForValue(error[0]);
          var hi = x.getPixelForValue(error[1]);
          ctx.beginPath();
          ctx.moveTo(lo, y); ctx.lineTo(hi, y);
          ctx.moveTo(lo, y - cap); ctx.lineTo(lo, y + cap);
          ctx.moveTo(hi, y - cap); ctx.lineTo(hi, y + cap);
          ctx.stroke();
        });
        ctx.restore();
      },
    };
  }

  function referenceLine(spec) {
    // For instance 50% on a win-rate chart: where neither system is preferred.
    return {
      id: "referenceLine",
      afterDatasetsDraw: function (chart) {
        if (spec.reference === undefined || spec.reference === null) return;
        var px = chart.scales.x.getPixelForValue(spec.reference), area = chart.chartArea, ctx = chart.ctx;
        ctx.save();
        ctx.strokeStyle = "#a8321f";
        ctx.setLineDash([4, 4]);
        ctx.beginPath();
        ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom);
        ctx.stroke();
        ctx.restore();
      },
    };
  }

  function valueLabels(spec) {
    // The number at the end of each bar, so a small chart is read without hovering.
    return {
      id: "valueLabels",
      afterDatasetsDraw: function (chart) {
        if (!spec.value_labels) return;
        var bars = chart.getDatasetMeta(0).data, ctx = chart.ctx, area = chart.chartArea;
        ctx.save();
        ctx.fillStyle = "#1d232a";
        ctx.font = "12px sans-serif";
        ctx.textBaseline = "middle";
        spec.values.forEach(function (value, i) {
          if (!bars[i] || value === null || value === undefined) return;
          var text = formatValue(spec, value), width = ctx.measureText(text).width;
          var x = bars[i].x + 4;
          if (x + width > area.right) { // no room past the bar's end: write it inside, in white
            ctx.fillStyle = "#ffffff";
            x = bars[i].x - width - 4;
          }
          ctx.fillText(text, x, bars[i].y);
          ctx.fillStyle = "#1d232a";
        });
        ctx.restore();
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
          backgroundColor: spec.colors || spec.kinds.map(function (kind) { return COLORS[kind] || COLORS["public"]; }),
        }],
      },
      plugins: [whiskers(spec), referenceLine(spec), valueLabels(spec)],
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
              label: function (item) { return tooltipLabel(spec, item.dataIndex, item.parsed.x); },
            },
          },
        },
        scales: {
          x: spec.scale === "logarithmic" ? logAxis() : valueAxis(spec),
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
