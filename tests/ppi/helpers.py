"""Simulated items written as the hub's ratings files (one vote per line), for the CLI tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evaluation.ppi.items import Items

OUTCOME = {1.0: "A", 0.5: "tie", 0.0: "B"}


def _row(prompt: str, a: str, b: str, value: float, rater: str, left: str | None, flip: bool) -> dict:
    """A vote on (a, b) worth `value` to a, written from b's side when flip; left is "a", "b" or None."""
    first, second, v = (b, a, 1.0 - value) if flip else (a, b, value)
    side = None if left is None else ({"a": "B", "b": "A"}[left] if flip else left.upper())
    return {
        "prompt_id": prompt,
        "system_a": first,
        "system_b": second,
        "outcome": OUTCOME[v],
        "rater": rater,
        "left": side,
    }


def write_votes(items: Items, n_prompts: int, human: Path, judge: Path, *, judge_name: str = "judge-1") -> None:
    """One human vote per labelled item (needs Scenario(human_votes=1)) and the judge's two orders per item
    (simulate's item i is prompt i % n_prompts). Each item is written from a random side, so the reader's
    orientation is exercised."""
    rng = np.random.default_rng(0)
    human_rows, judge_rows = [], []
    for i in range(len(items.pair)):
        a, b = items.systems[items.pair_a[items.pair[i]]], items.systems[items.pair_b[items.pair[i]]]
        flip, prompt = bool(rng.random() < 0.5), f"q{i % n_prompts}"
        judge_rows.append(_row(prompt, a, b, float(items.judge_left_a[i]), judge_name, "a", flip))
        judge_rows.append(_row(prompt, a, b, float(items.judge_left_b[i]), judge_name, "b", flip))
        if items.human_votes[i]:
            human_rows.append(_row(prompt, a, b, float(items.human[i]), f"rater-{i % 7}", None, flip))
    for path, rows in ((human, human_rows), (judge, judge_rows)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
