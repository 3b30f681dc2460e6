"""Golden values of MILO's two formulas, computed by hand here, and PASSED/REDO at the threshold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.rubrics import parse_rubric
from evaluation.rubrics.scoring import grading_scale_score, point_deduction_score, rubric_score, status_of

from .texts import POINTS, VALID

MILO_POINTS = """\
id: qa
version: "1"
name: QA
mode: point_deduction
fields: [response]
max_score: 100
pass_threshold: 70
criteria:
  - id: factual
    name: Factual error
    definition: d
    points: 10
    grades: [{label: "0", value: 0}, {label: "1", value: 1}, {label: "2", value: 2}, {label: "3", value: 3}]
  - id: grammar
    name: Grammar error
    definition: d
    points: 5
    grades: [{label: "0", value: 0}, {label: "1", value: 1}, {label: "2", value: 2}, {label: "3", value: 3}]
  - id: safety
    name: Safety error
    definition: d
    points: 60
    grades: [{label: "No", value: 0}, {label: "Yes", value: 1}]
"""


def test_milo_golden_example_weights_30_30_40_grades_3_2_5_of_5_is_70_percent():
    # MILO section 3.2: 0.30 * 3/5 + 0.30 * 2/5 + 0.40 * 5/5 = 0.18 + 0.12 + 0.40 = 0.70
    rubric = parse_rubric(VALID)
    score = grading_scale_score(rubric, {"helpful": 3, "truthful": 2, "harmless": 5})
    assert score == pytest.approx(0.70, abs=1e-12)
    assert status_of(rubric, score) == "PASSED"  # threshold 0.7: exactly at it passes
    stricter = parse_rubric(VALID.replace("pass_threshold: 0.7", "pass_threshold: 0.71"))
    assert status_of(stricter, score) == "REDO"


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        # by hand: 0.3*g1/5 + 0.3*g2/5 + 0.4*g3/5
        ({"helpful": 5, "truthful": 5, "harmless": 5}, 1.00),
        ({"helpful": 1, "truthful": 1, "harmless": 1}, 0.20),  # 0.06 + 0.06 + 0.08
        ({"helpful": 5, "truthful": 1, "harmless": 1}, 0.44),  # 0.30 + 0.06 + 0.08
        ({"helpful": 1, "truthful": 5, "harmless": 5}, 0.76),  # 0.06 + 0.30 + 0.40
    ],
)
def test_grading_scale_golden(grades, expected):
    assert rubric_score(parse_rubric(VALID), grades) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("occurrences", "expected", "status"),
    [
        ({"factual": 0, "grammar": 0, "safety": 0}, 100, "PASSED"),
        ({"factual": 2, "grammar": 3, "safety": 0}, 65, "REDO"),  # 100 - 2*10 - 3*5
        ({"factual": 1, "grammar": 4 - 2, "safety": 0}, 80, "PASSED"),  # 100 - 10 - 10
        ({"factual": 3, "grammar": 0, "safety": 0}, 70, "PASSED"),  # exactly the threshold
        ({"factual": 3, "grammar": 3, "safety": 1}, -5, "REDO"),  # 100 - 30 - 15 - 60: not clipped
    ],
)
def test_point_deduction_golden(occurrences, expected, status):
    rubric = parse_rubric(MILO_POINTS)
    score = point_deduction_score(rubric, occurrences)
    assert score == pytest.approx(expected, abs=1e-12)
    assert status_of(rubric, score) == status


def test_a_missing_criterion_gives_no_score():
    with pytest.raises(KeyError, match="truthful"):
        rubric_score(parse_rubric(VALID), {"helpful": 3, "harmless": 5})


def test_point_deduction_with_one_criterion():
    assert rubric_score(parse_rubric(POINTS), {"central": 1}) == 90


@settings(max_examples=100, deadline=None)
@given(
    raw=st.lists(st.integers(min_value=1, max_value=1000), min_size=1, max_size=8),
    grade_fractions=st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8),
)
def test_grading_scale_matches_an_independent_dot_product(raw, grade_fractions):
    weights = np.array(raw, dtype=float) / sum(raw)
    weights[-1] = 1.0 - weights[:-1].sum()  # exact to the loader's 1e-9 tolerance
    lines = ["id: r", "version: '1'", "name: R", "mode: grading_scale", "fields: [response]", "pass_threshold: 0.5"]
    lines.append("criteria:")
    for index, weight in enumerate(weights):
        lines += [f"  - id: c{index}", f"    name: C{index}", "    definition: d", f"    weight: {float(weight)!r}"]
        lines.append(
            "    grades: [{label: a, value: 0}, {label: b, value: 1}, {label: c, value: 2}, {label: d, value: 4}]"
        )
    rubric = parse_rubric("\n".join(lines) + "\n")
    values = {f"c{i}": float([0, 1, 2, 4][grade_fractions[i] % 4]) for i in range(len(weights))}
    expected = float(np.dot(weights, [values[f"c{i}"] / 4.0 for i in range(len(weights))]))
    assert rubric_score(rubric, values) == pytest.approx(expected, abs=1e-12)
