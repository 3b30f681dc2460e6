"""hub/static/charts.js run under Node with a stand-in for Chart.js: which interval whiskers it draws and what the
tooltips say. An interval open on one side ([null, x], as IRT fits may give) is neither drawn nor quoted."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from hub.web.templating import STATIC

NODE = shutil.which("node")

# Loads charts.js with a fake window.Chart that keeps the config, then runs the whiskers plugin against a fake chart
# whose x scale maps a value v to pixel 100 * v and whose context records every line; prints what it saw as JSON.
HARNESS = r"""
const fs = require("fs");
const [script, specJson] = process.argv.slice(1);
const spec = JSON.parse(specJson);
let config = null;
globalThis.window = { Chart: function (canvas, cfg) { config = cfg; } };
const canvas = { getAttribute: () => "chart", parentNode: { style: {}, clientWidth: 600 } };
globalThis.document = {
  readyState: "complete",
  getElementById: () => ({ textContent: specJson }),
  querySelectorAll: () => [canvas],
};
eval(fs.readFileSync(script, "utf8"));
const lines = [];
const texts = [];
let point = null;
const ctx = {
  save() {}, restore() {}, beginPath() {}, stroke() {}, setLineDash() {},
  measureText(text) { return { width: 6 * text.length }; },
  fillText(text, x, y) { texts.push([text, x, y, this.fillStyle]); },
  moveTo(x, y) { point = [x, y]; },
  lineTo(x, y) { lines.push([point, [x, y]]); point = [x, y]; },
};
const chart = {
  ctx,
  chartArea: { top: 0, bottom: 100, right: 200 },
  scales: { x: { getPixelForValue: (v) => 100 * v } },
  getDatasetMeta: () => ({ data: spec.values.map((v, i) => ({ x: 100 * v, y: 30 * i + 15, height: 24 })) }),
};
const whiskers = config.plugins.find((p) => p.id === "whiskers");
whiskers.afterDatasetsDraw(chart);
config.plugins.find((p) => p.id === "valueLabels").afterDatasetsDraw(chart);
const label = config.options.plugins.tooltip.callbacks.label;
const tooltips = spec.values.map((v, i) => label({ dataIndex: i, parsed: { x: v } }));
console.log(JSON.stringify({ lines, texts, tooltips, axis: config.options.scales.x }));
"""


def run_charts(spec: dict) -> dict:
    if NODE is None:
        pytest.skip("Node.js is not installed")
    done = subprocess.run(
        [NODE, "-e", HARNESS, str(STATIC / "charts.js"), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def spec_with(errors: list) -> dict:
    return {
        "title": "IRT ability",
        "label": "ability",
        "labels": [f"system {i}" for i in range(len(errors))],
        "values": [0.25] * len(errors),
        "kinds": ["public"] * len(errors),
        "errors": errors,
    }


def test_a_closed_interval_is_a_whisker_with_two_caps():
    seen = run_charts(spec_with([[-0.5, 1.0]]))
    y = 15
    assert [[-50, y], [100, y]] in seen["lines"]  # the interval itself, at the bar's height
    assert [[-50, y - 6], [-50, y + 6]] in seen["lines"] and [[100, y - 6], [100, y + 6]] in seen["lines"]
    assert len(seen["lines"]) == 3
    assert seen["tooltips"] == ["ability: 0.2500 (interval -0.5000 to 1.000)"]


@pytest.mark.parametrize("open_interval", [[None, 0.5], [0.1, None], [None, None]])
def test_an_interval_open_on_one_side_is_not_drawn_to_zero(open_interval):
    seen = run_charts(spec_with([open_interval, None, [0.0, 0.5]]))
    # Only the third bar's interval is drawn: no line starts or ends at pixel 0 for the open one.
    y = 30 * 2 + 15
    assert seen["lines"] == [[[0, y], [50, y]], [[0, y - 6], [0, y + 6]], [[50, y - 6], [50, y + 6]]]
    assert seen["tooltips"][0] == "ability: 0.2500" and seen["tooltips"][1] == "ability: 0.2500"
    assert seen["tooltips"][2] == "ability: 0.2500 (interval 0.000 to 0.5000)"


def test_the_value_axis_reaches_every_whisker():
    """A whisker past the bars widens the axis (Chart.js would otherwise draw it over the labels or cut it off)."""
    seen = run_charts(spec_with([[-0.4, 0.1], [None, 2.0], [0.2, 1.8]]))
    assert seen["axis"]["suggestedMin"] == -0.4 and seen["axis"]["suggestedMax"] == 1.8  # the open one is ignored
    assert "suggestedMin" not in run_charts({**spec_with([None]), "errors": [None]})["axis"]


def test_value_labels_write_each_bars_number_beside_it_or_inside_when_there_is_no_room():
    """A profile's small charts label their bars (x scale: pixel 100 * value; the plot ends at pixel 200)."""
    spec = {**spec_with([None, None]), "values": [0.5, 1.95], "value_labels": True}
    seen = run_charts(spec)
    assert seen["texts"] == [["0.5000", 54, 15, "#1d232a"], ["1.950", 195 - 6 * 5 - 4, 45, "#ffffff"]]
    assert run_charts(spec_with([None]))["texts"] == []  # other charts keep their bars unlabelled
