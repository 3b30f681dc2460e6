"""Rubric metrics (MILO): YAML criteria graded one by one by an LLM judge; grading scale or point deduction."""

from evaluation.rubrics.grading import CriterionResult, RubricResult, grade_items, rubric_signature
from evaluation.rubrics.items import dataset_items
from evaluation.rubrics.loader import load_rubric, parse_rubric, shipped_rubrics
from evaluation.rubrics.schema import Criterion, GradeOption, Rubric
from evaluation.rubrics.summary import GroupSummary, summarize
from evaluation.rubrics.yaml_nodes import RubricError

__all__ = [
    "Criterion",
    "CriterionResult",
    "GradeOption",
    "GroupSummary",
    "Rubric",
    "RubricError",
    "RubricResult",
    "dataset_items",
    "grade_items",
    "load_rubric",
    "parse_rubric",
    "rubric_signature",
    "shipped_rubrics",
    "summarize",
]
