"""The rubric's shape once validated: criteria, grade options, mode, threshold, and the limits on each."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Literal

Mode = Literal["grading_scale", "point_deduction"]
Harshness = Literal["lenient", "balanced", "strict"]

MODES: tuple[str, ...] = ("grading_scale", "point_deduction")
FIELD_NAMES: tuple[str, ...] = ("context", "response", "reference")
"""Item fields a rubric may show the judge; `response` (the text graded) is always one of them."""

HARSHNESS_INSTRUCTIONS: dict[str, str] = {
    "lenient": "Give the benefit of the doubt: grade down only for clear, material problems.",
    # MILO's own sentence (Table A2), the default.
    "balanced": "Please be a fair and unbiased judge, do not be overly critical or forgiving.",
    "strict": "Be strict: anything that fits a problem's definition counts against the response, however small.",
}

WEIGHT_TOLERANCE = 1e-9
"""Weights must sum to 1 within this; a score within it of the threshold counts as reaching it."""

MAX_RUBRIC_BYTES = 256 * 1024
MAX_CRITERIA = 50
MAX_GRADES = 20
MAX_ID_CHARS = 64
MAX_NAME_CHARS = 200
MAX_TEXT_CHARS = 20_000
MAX_EXPLANATION_WORDS = 1_000
MAX_GRADE_VALUE = 1e6
MAX_FIELD_CHARS = 100_000
"""Longest item field (context, response, reference) sent to the judge."""


@dataclass(frozen=True)
class GradeOption:
    """One grade a judge may give: its label ("Good"), its number, and what it means.

    In grading-scale mode the value is the grade g (the criterion's best grade G is the largest value); in
    point-deduction mode it is the number of occurrences of the error it stands for ("No" = 0, "Yes" = 1).
    """

    label: str
    value: float
    definition: str


@dataclass(frozen=True)
class Criterion:
    """One quality criterion, graded by its own judge call."""

    id: str
    name: str
    definition: str
    grades: tuple[GradeOption, ...]
    weight: float | None  # grading_scale only
    points: float | None  # point_deduction only: points deducted per occurrence
    harshness: Harshness

    @property
    def max_value(self) -> float:
        return max(option.value for option in self.grades)


@dataclass(frozen=True)
class Rubric:
    """A validated rubric (see `evaluation.rubrics.loader` for the YAML it comes from)."""

    id: str
    version: str
    name: str
    mode: Mode
    criteria: tuple[Criterion, ...]
    fields: tuple[str, ...]
    pass_threshold: float
    max_score: float  # 1.0 in grading_scale mode (scores are fractions); M in point_deduction mode
    max_explanation_words: int
    description: str
    instructions: str

    def criterion(self, criterion_id: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)

    @property
    def digest(self) -> str:
        """sha256 of the rubric's canonical JSON: any change to what the judge sees or how it is scored shows."""
        canonical = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict:
        return asdict(self)
