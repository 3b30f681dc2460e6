"""Per-group summaries: counts by hand, and the intervals' coverage by simulation with known truth."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.rubrics import parse_rubric, summarize
from evaluation.rubrics.grading import CriterionResult, RubricResult
from evaluation.rubrics.scoring import rubric_score, status_of

from .texts import VALID

RUBRIC = parse_rubric(VALID)  # weights 0.3, 0.3, 0.4; grades Bad=1, Good=5; REDO below 0.7


def result(group: str, grades: tuple[int, int, int] | None) -> RubricResult:
    if grades is None:
        criteria = tuple(CriterionResult(c.id, "error", problem="HTTP 500") for c in RUBRIC.criteria)
        return RubricResult({"system": group}, criteria, None, None, "demo@1", "sig")
    values = dict(zip([c.id for c in RUBRIC.criteria], grades, strict=True))
    criteria = tuple(CriterionResult(cid, "graded", grade=str(v), value=v) for cid, v in values.items())
    score = rubric_score(RUBRIC, values)
    return RubricResult({"system": group}, criteria, score, status_of(RUBRIC, score), "demo@1", "sig")


def test_counts_and_means_by_hand():
    results = [result("a", (5, 5, 5)), result("a", (1, 1, 5)), result("a", None), result("b", (5, 1, 1))]
    a, b = summarize(RUBRIC, results)
    # a: scores 1.0 and 0.06 + 0.06 + 0.4 = 0.52; one REDO; the third item failed
    assert (a.items, a.scored, a.passed) == (3, 2, 1)
    assert a.mean == pytest.approx(0.76) and a.pass_rate == 0.5 and a.coverage == pytest.approx(2 / 3)
    assert a.criteria["helpful"] == {"graded": 2, "unparseable": 0, "error": 1, "mean_value": 3.0}
    # b: 0.3 + 0.06 + 0.08 = 0.44, a single score: no t interval, Wilson still defined
    assert b.mean == pytest.approx(0.44) and b.mean_interval is None and b.pass_interval is not None
    (everything,) = summarize(RUBRIC, results, by=None)
    assert (everything.group, everything.items, everything.scored) == ("all", 4, 3)


def test_interval_coverage_by_simulation():
    """400 data sets of 80 items, grades drawn with known probabilities: the 95% intervals of the mean score and
    of the pass rate each cover the true value 92-98% of the time."""
    rng = np.random.default_rng(20261123)
    p_good = np.array([0.7, 0.5, 0.8])  # each criterion graded Good (5) else Bad (1), independently
    outcomes = [(g1, g2, g3) for g1 in (1, 5) for g2 in (1, 5) for g3 in (1, 5)]
    probability = [np.prod([p if g == 5 else 1 - p for g, p in zip(o, p_good, strict=True)]) for o in outcomes]
    score = {o: 0.3 * o[0] / 5 + 0.3 * o[1] / 5 + 0.4 * o[2] / 5 for o in outcomes}
    true_mean = sum(p * score[o] for p, o in zip(probability, outcomes, strict=True))
    true_pass = sum(p for p, o in zip(probability, outcomes, strict=True) if score[o] >= 0.7 - 1e-9)
    covered_mean = covered_pass = 0
    runs = 400
    for _ in range(runs):
        draws = rng.choice(len(outcomes), size=80, p=probability)
        (summary,) = summarize(RUBRIC, [result("s", outcomes[i]) for i in draws])
        low, high = summary.mean_interval
        covered_mean += low <= true_mean <= high
        low, high = summary.pass_interval
        covered_pass += low <= true_pass <= high
    assert 0.92 <= covered_mean / runs <= 0.98
    assert 0.92 <= covered_pass / runs <= 0.98
