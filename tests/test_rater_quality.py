"""Rater screening on hand-worked examples (each figure counted in the comments), one-sided tests against
scipy's binomial tail computed here, and a simulation with known good and bad raters."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import binom

from evaluation.rater_quality import FLAG_CODES, RatingRow, ScreeningThresholds, screen


def by_rater(rows, thresholds=None):
    return {q.rater: q for q in screen(rows, thresholds)}


def test_rating_row_validates_its_fields():
    with pytest.raises(ValueError, match="outcome"):
        RatingRow("p1", "r1", "left")
    with pytest.raises(ValueError, match="kind"):
        RatingRow("p1", "r1", "A", kind="gold")
    with pytest.raises(ValueError, match="choice"):
        RatingRow("p1", "r1", "A", choice="middle")
    with pytest.raises(ValueError, match="left"):
        RatingRow("p1", "r1", "A", left="C")


@pytest.mark.parametrize(
    ("row", "side"),
    [
        (RatingRow("p", "r", "A", left="A"), "left"),
        (RatingRow("p", "r", "A", left="B"), "right"),
        (RatingRow("p", "r", "tie", left="B"), "tie"),
        (RatingRow("p", "r", "tie", choice="both_bad"), "tie"),
        (RatingRow("p", "r", "B", choice="right"), "right"),
        (RatingRow("p", "r", "B"), None),
        (RatingRow("p", "r", "tie"), None),
    ],
)
def test_side_is_undone_from_left_and_outcome(row, side):
    assert row.side == side


def test_hand_worked_coagreement():
    # p1: r1 A, r2 A, r3 A, r4 B   -> for r4 the others (r1 r2 r3) are unanimous A: a disagreement.
    # p2: r1 B, r2 B, r4 B         -> r4 agrees with unanimous (r1, r2); r1's others (r2, r4) unanimous B.
    # p3: r1 A, r4 tie             -> one other rater only: a majority, but not "unanimous co-raters".
    # p4: r1 A, r2 B, r4 A         -> for r4 the others split 1-1: no majority.
    rows = [
        RatingRow("p1", "r1", "A"),
        RatingRow("p1", "r2", "A"),
        RatingRow("p1", "r3", "A"),
        RatingRow("p1", "r4", "B"),
        RatingRow("p2", "r1", "B"),
        RatingRow("p2", "r2", "B"),
        RatingRow("p2", "r4", "B"),
        RatingRow("p3", "r1", "A"),
        RatingRow("p3", "r4", "tie"),
        RatingRow("p4", "r1", "A"),
        RatingRow("p4", "r2", "B"),
        RatingRow("p4", "r4", "A"),
        RatingRow("p4", None, "tie"),  # an automatic tie: no rater, ignored
    ]
    quality = by_rater(rows)
    assert set(quality) == {"r1", "r2", "r3", "r4"}
    r4 = quality["r4"]
    assert r4.n_judgements == 4
    assert (r4.unanimous_items, r4.unanimous_disagreements, r4.unanimous_agreement) == (2, 1, 0.5)
    # Majorities for r4: p1 (A, missed), p2 (B, hit), p3 (A, missed); p4 has none.
    assert r4.majority_items == 3 and r4.majority_agreement == pytest.approx(1 / 3)
    # r1: p1 others r2 A, r3 A, r4 B -> majority A (hit), not unanimous; p2 others B, B -> unanimous hit;
    # p3 other r4 tie -> majority tie (miss); p4 others r2 B, r4 A -> none.
    r1 = quality["r1"]
    assert (r1.unanimous_items, r1.unanimous_disagreements) == (1, 0)
    assert r1.majority_items == 3 and r1.majority_agreement == pytest.approx(2 / 3)
    assert not any(q.flagged for q in quality.values())  # too little evidence for any rule


def test_unanimous_rule_fires_only_with_enough_items_and_low_agreement():
    thresholds = ScreeningThresholds(min_unanimous_items=4, min_unanimous_agreement=0.5)
    rows = []
    for i in range(4):
        rows += [RatingRow(f"p{i}", "good1", "A"), RatingRow(f"p{i}", "good2", "A")]
        rows.append(RatingRow(f"p{i}", "odd", "B" if i < 3 else "A"))  # 1 of 4 agreements: 25% < 50%
    quality = by_rater(rows, thresholds)
    assert quality["odd"].flag_codes == ["unanimous_disagreement"]
    assert "3 of 4" in quality["odd"].flags[0]
    # With one item fewer there is not enough evidence.
    assert not by_rater(rows[3:], thresholds)["odd"].flagged


def test_excluded_raters_are_not_co_raters_but_are_still_measured():
    rows = []
    for i in range(10):
        rows += [RatingRow(f"p{i}", "x1", "B", excluded=True), RatingRow(f"p{i}", "x2", "B", excluded=True)]
        rows += [RatingRow(f"p{i}", "honest", "A"), RatingRow(f"p{i}", "honest2", "A")]
    quality = by_rater(rows)
    # honest's co-raters are honest2 only (x1, x2 excluded): not unanimous by definition (needs 2 others).
    assert quality["honest"].unanimous_items == 0
    assert quality["x1"].excluded and not quality["honest"].excluded
    # x1 is measured against the non-excluded others: honest, honest2 unanimous A, x1 says B every time.
    assert (quality["x1"].unanimous_items, quality["x1"].unanimous_disagreements) == (10, 10)
    assert "unanimous_disagreement" in quality["x1"].flag_codes


@pytest.mark.parametrize(("correct", "checks"), [(5, 5), (4, 5), (3, 5), (2, 8), (9, 12)])
def test_attention_accuracy_and_one_sided_test(correct, checks):
    rows = [
        RatingRow(f"c{i}", "r1", "A" if i < correct else "B", kind="attention", expected="A") for i in range(checks)
    ]
    quality = by_rater(rows)["r1"]
    assert (quality.attention_checks, quality.attention_correct) == (checks, correct)
    assert quality.attention_accuracy == pytest.approx(correct / checks)
    p = binom.sf(correct - 1, checks, 1 / 3)  # P(X >= correct) under chance
    assert quality.attention_p_value == pytest.approx(p, rel=1e-9)
    assert ("attention" in quality.flag_codes) == (p >= 0.05)


def test_perfect_rater_with_p_value_zero_is_not_flagged():
    # binomtest(700, 700, 1/3, "greater") underflows to exactly 0.0; that must not read as "no p-value".
    rows = [RatingRow(f"c{i}", "r1", "A", kind="attention", expected="A") for i in range(700)]
    rows += [RatingRow(f"p{i}", "r1", "A") for i in range(700)]
    rows += [RatingRow(f"p{i}", "r1", "A", kind="repeat") for i in range(700)]
    quality = by_rater(rows)["r1"]
    assert quality.attention_p_value == 0.0 and quality.self_consistency_p_value == 0.0
    assert "attention" not in quality.flag_codes and "self_consistency" not in quality.flag_codes


def test_known_answer_rows_count_as_checks_and_rows_without_expected_do_not():
    rows = [
        RatingRow("k1", "r1", "B", kind="known_answer", expected="B"),
        RatingRow("k2", "r1", "A", kind="attention", expected=None),
    ]
    quality = by_rater(rows)["r1"]
    assert (quality.attention_checks, quality.attention_correct, quality.n_judgements) == (1, 1, 0)


def test_self_consistency_on_repeated_items():
    # p1 shown twice: A then (repeat) A -> consistent. p2: B then tie -> not. p3: tie, repeat tie, repeat B.
    rows = [
        RatingRow("p1", "r1", "A", left="A"),
        RatingRow("p2", "r1", "B", left="A"),
        RatingRow("p3", "r1", "tie"),
        RatingRow("p1", "r1", "A", kind="repeat", left="B"),  # shown the other way round, same outcome
        RatingRow("p2", "r1", "tie", kind="repeat"),
        RatingRow("p3", "r1", "tie", kind="repeat"),
        RatingRow("p3", "r1", "B", kind="repeat"),
    ]
    quality = by_rater(rows)["r1"]
    assert (quality.repeats, quality.repeats_consistent) == (4, 2)
    assert quality.self_consistency == 0.5
    assert quality.self_consistency_p_value == pytest.approx(binom.sf(1, 4, 1 / 3))
    assert quality.n_judgements == 3


def test_inconsistent_rater_is_flagged():
    rng = np.random.default_rng(5)
    rows = []
    for i in range(12):
        rows.append(RatingRow(f"p{i}", "r1", "A"))
        rows.append(RatingRow(f"p{i}", "r1", str(rng.choice(["B", "tie"])), kind="repeat"))
    assert by_rater(rows)["r1"].flag_codes == ["self_consistency"]


def test_choice_shares_and_always_left_clicker():
    rng = np.random.default_rng(1)
    rows = []
    for i in range(20):
        left = str(rng.choice(["A", "B"]))
        rows.append(RatingRow(f"p{i}", "lefty", left, left=left, choice="left"))
        rows.append(RatingRow(f"p{i}", "mixed", ["A", "B", "tie"][i % 3], left=left))
    quality = by_rater(rows)
    assert quality["lefty"].choice_shares == {"left": 1.0, "right": 0.0, "tie": 0.0}
    assert quality["lefty"].flag_codes == ["choice_bias"]
    assert "left in 100% of 20" in quality["lefty"].flags[0]
    mixed = quality["mixed"]
    assert mixed.known_choices == 20 and mixed.choice_shares is not None
    assert mixed.choice_shares["tie"] == pytest.approx(6 / 20)  # i % 3 == 2 for i in 2, 5, ..., 17
    assert mixed.outcome_shares == {"A": 7 / 20, "tie": 6 / 20, "B": 7 / 20}
    assert not mixed.flagged


def test_always_tie_is_seen_without_the_side():
    rows = [RatingRow(f"p{i}", "r1", "tie") for i in range(10)]
    quality = by_rater(rows)["r1"]
    assert quality.choice_shares is None and quality.outcome_shares == {"A": 0.0, "tie": 1.0, "B": 0.0}
    assert quality.flag_codes == ["choice_bias"]
    assert not by_rater(rows[:9])["r1"].flagged  # fewer than 10 judgements


def test_median_seconds_per_judgement():
    # Task t1: 10 rows, 15 s -> 1.5 s each; t2: 5 rows, 40 s -> 8 s; t3: 4 rows, 4 s -> 1 s. Median 1.5 s.
    rows = [RatingRow(f"a{i}", "r1", "A", task="t1", seconds_on_task=15.0) for i in range(10)]
    rows += [RatingRow(f"b{i}", "r1", "B", task="t2", seconds_on_task=40.0) for i in range(5)]
    rows += [RatingRow(f"c{i}", "r1", "tie", task="t3", seconds_on_task=4.0) for i in range(4)]
    rows += [RatingRow("d", "r1", "A", task=None, seconds_on_task=None)]
    quality = by_rater(rows)["r1"]
    assert quality.timed_tasks == 3
    assert quality.median_seconds_per_judgement == pytest.approx(1.5)
    assert quality.flag_codes == ["too_fast"]
    assert not by_rater(rows, ScreeningThresholds(min_median_seconds=1.0))["r1"].flagged


def test_to_dict_is_json_and_codes_are_known():
    rows = [RatingRow(f"p{i}", "r1", "tie") for i in range(10)]
    (quality,) = screen(rows)
    data = quality.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(quality.flag_codes) <= set(FLAG_CODES)
    assert len(quality.flags) == len(quality.flag_codes)


def simulate(rng, honest=30, bad=3, items=300, per_item=3):
    """Known truth: honest raters see the better system with probability .75 (else a tie or the other side),
    and pass attention checks 90% of the time (10 checks each); bad raters click at random."""
    truth = rng.choice(["A", "B", "tie"], size=items, p=[0.45, 0.4, 0.15])
    names = [f"h{i}" for i in range(honest)] + [f"bad{i}" for i in range(bad)]
    rows = []
    for item in range(items):
        for rater in rng.choice(len(names), size=per_item, replace=False):
            name = names[rater]
            good = rater < honest
            outcome = truth[item] if good and rng.random() < 0.75 else rng.choice(["A", "B", "tie"])
            rows.append(RatingRow(f"p{item}", name, str(outcome), task=f"{name}-{item // 10}", seconds_on_task=10.0))
    for rater, name in enumerate(names):
        good = rater < honest
        for check in range(10):
            outcome = "A" if good and rng.random() < 0.9 else str(rng.choice(["A", "B", "tie"]))
            rows.append(RatingRow(f"check{check}", name, outcome, kind="attention", expected="A"))
    return rows


def test_simulation_flags_the_random_clickers():
    quality = by_rater(simulate(np.random.default_rng(2024)))
    bad = {name for name in quality if name.startswith("bad")}
    flagged = {name for name, q in quality.items() if q.flagged}
    assert bad <= flagged
    assert len(flagged - bad) <= 2  # at most a couple of false alarms among 30 honest raters
