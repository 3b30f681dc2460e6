"""Rubric results per group (a system, or a rater in MILO's QA use): mean score, pass rate, coverage, intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from evaluation.pairwise_results import wilson_interval
from evaluation.rubrics.grading import RubricResult
from evaluation.rubrics.schema import Rubric

ALL = "all"


@dataclass(frozen=True)
class GroupSummary:
    """One group's results. Mean and pass rate are over scored items only; coverage says how many those are.

    mean_interval is Student's t interval of the mean score; pass_interval is Wilson's for the pass rate; both
    treat items as independent draws, None when fewer than two (one) items were scored.
    """

    group: str
    items: int
    scored: int
    mean: float | None
    mean_interval: tuple[float, float] | None
    passed: int
    pass_rate: float | None
    pass_interval: tuple[float, float] | None
    criteria: dict[str, dict[str, Any]]

    @property
    def coverage(self) -> float:
        return self.scored / self.items if self.items else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["coverage"] = self.coverage
        return data


def summarize(
    rubric: Rubric, results: Sequence[RubricResult], *, by: str | None = "system", level: float = 0.95
) -> list[GroupSummary]:
    """One summary per value of the id key `by` (in order of first appearance), or one for all when None."""
    groups: dict[str, list[RubricResult]] = {}
    for index, result in enumerate(results):
        if by is None:
            key = ALL
        elif by in result.ids:
            key = result.ids[by]
        else:
            raise KeyError(f"result {index + 1} has no id {by!r} to group by (its ids: {', '.join(result.ids)})")
        groups.setdefault(key, []).append(result)
    return [_summary(rubric, key, members, level) for key, members in groups.items()]


def _summary(rubric: Rubric, group: str, results: list[RubricResult], level: float) -> GroupSummary:
    scores = np.array([r.score for r in results if r.score is not None], dtype=float)
    passed = sum(1 for r in results if r.status == "PASSED")
    mean = float(scores.mean()) if scores.size else None
    interval = None
    if scores.size >= 2:
        half = float(student_t.ppf(0.5 + level / 2, scores.size - 1) * scores.std(ddof=1) / math.sqrt(scores.size))
        interval = (float(scores.mean()) - half, float(scores.mean()) + half)
    return GroupSummary(
        group=group,
        items=len(results),
        scored=int(scores.size),
        mean=mean,
        mean_interval=interval,
        passed=passed,
        pass_rate=passed / scores.size if scores.size else None,
        pass_interval=wilson_interval(passed, int(scores.size), level),
        criteria={c.id: _criterion_counts(results, index) for index, c in enumerate(rubric.criteria)},
    )


def _criterion_counts(results: list[RubricResult], index: int) -> dict[str, Any]:
    outcomes = [r.criteria[index] for r in results]
    values = [o.value for o in outcomes if o.value is not None]
    return {
        "graded": len(values),
        "unparseable": sum(1 for o in outcomes if o.status == "unparseable"),
        "error": sum(1 for o in outcomes if o.status == "error"),
        "mean_value": math.fsum(values) / len(values) if values else None,
    }
