"""A fit report does not depend on the order the judgements were read in: the same ratings, shuffled, or read with
extra rows of another dataset and excluded rows first, give the same abilities, bootstrap and rank intervals,
pairwise tests and experiment tests. (The hub's fit and `chateval irt fit` on its download read the rows in different
orders; before the fit sorted them canonically their bootstrap intervals differed.)"""

from __future__ import annotations

import numpy as np
import pytest
from simulate_ratings import export_records, simulate

from evaluation.irt.result import UNSIGNED, fit_report
from evaluation.judgements import from_records


def _numbers(records: list[dict], **options) -> dict:
    report = fit_report(from_records(records, qualify_prompts=False).for_dataset("d"), bootstrap=30, **options)
    document = report.to_json()
    document["signature"] = {k: v for k, v in document["signature"].items() if k not in UNSIGNED}
    return document


@pytest.fixture(scope="module")
def records() -> list[dict]:
    judgements, _ = simulate(1500, 4, 30, n_raters=12, auto_tie_share=0.03, seed=5)
    rows = export_records(judgements)
    for row in rows:
        row["dataset"] = "d"
    return rows


def test_shuffled_rows_give_the_same_report(records):
    shuffled = [records[i] for i in np.random.default_rng(1).permutation(len(records))]
    assert _numbers(shuffled) == _numbers(records)


def test_rows_of_other_datasets_and_excluded_rows_read_first_change_nothing(records):
    other = [{**row, "dataset": "other", "prompt_id": f"x{row['prompt_id']}"} for row in records[:200]]
    excluded = [{**row, "excluded": True, "rater": "a-dropped-rater"} for row in records[::-1][:50]]
    with_others = [*other, *excluded, *records]
    plain = _numbers([*records, *excluded])
    assert _numbers(with_others) == plain
    assert plain["n_excluded"] == 50
