"""MILO's two rubric scores (grading scale, point deduction) and the PASSED/REDO status they give."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from evaluation.rubrics.schema import WEIGHT_TOLERANCE, Rubric

Status = Literal["PASSED", "REDO"]


def grading_scale_score(rubric: Rubric, values: Mapping[str, float]) -> float:
    """S = sum_i w_i g_i / G_i: weight times grade over the criterion's best grade (MILO Eq. 2), from 0 to 1.

    `values` maps each criterion id to the value of the grade given.
    """
    return math.fsum(c.weight * values[c.id] / c.max_value for c in rubric.criteria if c.weight is not None)


def point_deduction_score(rubric: Rubric, occurrences: Mapping[str, float]) -> float:
    """S = M - sum_i e_i m_i: the maximum less, per criterion, its occurrences times its points (MILO Eq. 1).

    Not clipped at 0: a response with more errors than M allows scores below 0, as the formula says.
    """
    deduction = math.fsum(occurrences[c.id] * c.points for c in rubric.criteria if c.points is not None)
    return rubric.max_score - deduction


def rubric_score(rubric: Rubric, values: Mapping[str, float]) -> float:
    """The rubric's score from the grade value of every criterion (its mode picks the formula)."""
    missing = [c.id for c in rubric.criteria if c.id not in values]
    if missing:
        raise KeyError(f"no grade for criteria {', '.join(missing)}")
    if rubric.mode == "grading_scale":
        return grading_scale_score(rubric, values)
    return point_deduction_score(rubric, values)


def status_of(rubric: Rubric, score: float) -> Status:
    """PASSED unless the score falls below the threshold (MILO: below it, the response is REDO).

    A score within 1e-9 of the threshold reaches it, so 0.3*3/5 + 0.3*2/5 + 0.4 passes a 0.7 threshold
    whatever floating point makes of the sum.
    """
    return "PASSED" if score >= rubric.pass_threshold - WEIGHT_TOLERANCE else "REDO"
