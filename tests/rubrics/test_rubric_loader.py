"""Rubric YAML validation: the shipped rubrics load, and each kind of bad input is refused naming its line."""

from __future__ import annotations

import pytest

from evaluation.rubrics import RubricError, load_rubric, parse_rubric, shipped_rubrics
from evaluation.rubrics.schema import MAX_CRITERIA, MAX_RUBRIC_BYTES

from .texts import POINTS, VALID


def replace(old: str, new: str, text: str = VALID) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def refused(text: str) -> RubricError:
    with pytest.raises(RubricError) as caught:
        parse_rubric(text, name="r.yaml")
    return caught.value


def test_valid_rubric_loads_with_defaults():
    rubric = parse_rubric(VALID)
    assert [c.id for c in rubric.criteria] == ["helpful", "truthful", "harmless"]
    assert [c.weight for c in rubric.criteria] == [0.3, 0.3, 0.4]
    assert rubric.max_score == 1.0 and rubric.pass_threshold == 0.7
    assert rubric.fields == ("context", "response")
    assert rubric.max_explanation_words == 80
    assert {c.harshness for c in rubric.criteria} == {"balanced"}
    assert rubric.criteria[0].max_value == 5


@pytest.mark.parametrize("name", ["helpfulness", "milo-qa"])
def test_shipped_rubrics_load_by_name(name):
    assert name in shipped_rubrics()
    rubric = load_rubric(name)
    assert rubric.id == name
    assert rubric.mode == {"helpfulness": "grading_scale", "milo-qa": "point_deduction"}[name]


def test_missing_grades_names_the_criterion_and_line():
    text = VALID.replace(
        "    weight: 0.4\n    grades:\n      - {label: Bad, value: 1}\n      - {label: Good, value: 5}\n",
        "    weight: 0.4\n",
    )
    error = refused(text)
    assert error.line == 22 and "criterion 'harmless' has no grades" in error.message
    assert error.exit_code == 3 and "r.yaml, line 22" in error.describe()


def test_a_single_grade_is_not_a_scale():
    error = refused(replace("      - {label: Bad, value: 1}\n", ""))
    assert error.line == 13 and "grades needs at least 2 entries" in error.message


def test_duplicate_criterion_id_names_both_lines():
    error = refused(replace("id: truthful", "id: helpful"))
    assert error.line == 15 and "duplicate criterion id 'helpful' (first at line 8)" in error.message


def test_duplicate_criterion_name_is_refused():
    error = refused(replace("name: Truthfulness", "name: HELPFULNESS"))
    assert error.line == 15 and "duplicate criterion name" in error.message


def test_weights_not_summing_to_one():
    error = refused(replace("weight: 0.4", "weight: 0.35"))
    assert error.line == 8 and "weights sum to 0.95, not 1" in error.message


def test_weights_off_by_more_than_the_tolerance():
    error = refused(replace("weight: 0.4", "weight: 0.40000001"))
    assert "not 1 (within 1e-09)" in error.message or "not 1 (within 1e-9)" in error.message


def test_unknown_field_name():
    error = refused(replace("fields: [context, response]", "fields: [context, response, answer]"))
    assert error.line == 5 and "unknown field 'answer'" in error.message and "reference" in error.message


def test_fields_must_include_the_response():
    error = refused(replace("fields: [context, response]", "fields: [context]"))
    assert error.line == 5 and "must include 'response'" in error.message


def test_unknown_key_is_a_typo_not_ignored():
    error = refused(replace("    weight: 0.3\n", "    wieght: 0.3\n"))
    assert error.line == 11 and "unknown key 'wieght'" in error.message


def test_duplicate_key_is_refused_not_overwritten():
    error = refused(replace("pass_threshold: 0.7\n", "pass_threshold: 0.7\npass_threshold: 0.1\n"))
    assert error.line == 7 and "duplicate key 'pass_threshold' in the rubric (first at line 6)" in error.message


def test_bad_mode():
    error = refused(replace("mode: grading_scale", "mode: likert"))
    assert error.line == 4 and "mode must be one of grading_scale, point_deduction" in error.message


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "'high'"])
def test_threshold_out_of_range(value):
    error = refused(replace("pass_threshold: 0.7", f"pass_threshold: {value}"))
    assert error.line == 6 and "pass_threshold" in error.message


def test_point_deduction_threshold_may_reach_max_score_but_not_beyond():
    text = POINTS.replace("pass_threshold: 80", "pass_threshold: 101")
    error = refused(text)
    assert "pass_threshold must be between 0 and 100" in error.message
    assert parse_rubric(POINTS.replace("pass_threshold: 80", "pass_threshold: 100")).pass_threshold == 100


def test_nul_escape_in_a_definition_is_refused_with_its_line():
    error = refused(replace("definition: Is it true?", 'definition: "Is it\\0 true?"'))
    assert error.line == 17 and "control character U+0000" in error.message


def test_raw_control_character_in_the_file_is_refused_with_its_line():
    error = refused(replace("definition: Is it true?", "definition: Is it\x07 true?"))
    assert error.line == 17 and "not allowed" in error.message


def test_control_character_in_a_name_and_a_newline_in_a_label():
    assert "control character U+0009" in refused(replace("name: Demo", 'name: "De\\tmo"')).message
    error = refused(replace("{label: Good, value: 5}", '{label: "Go\\nod", value: 5}'))
    assert error.line == 14 and "U+000A" in error.message


def test_not_utf8_is_refused_with_its_line():
    with pytest.raises(RubricError) as caught:
        parse_rubric(VALID.encode().replace(b"Is it true?", b"Is it \xff?"), name="r.yaml")
    assert caught.value.line == 17 and "not valid UTF-8" in caught.value.message


def test_size_limits(tmp_path):
    big = VALID + "# " + "x" * MAX_RUBRIC_BYTES + "\n"
    assert "limit is 262,144" in refused(big).message
    path = tmp_path / "big.yaml"
    path.write_text(big)
    with pytest.raises(RubricError, match="rubric file is"):
        load_rubric(path)
    long_definition = replace("definition: Is it true?", "definition: " + "y" * 20_001)
    assert "is 20,001 characters long; the limit is 20,000" in refused(long_definition).message


def test_too_many_criteria():
    block = (
        "  - id: c{n}\n    name: C{n}\n    definition: d\n    weight: 0.01\n"
        "    grades: [{{label: a, value: 0}}, {{label: b, value: 1}}]\n"
    )
    text = VALID.split("criteria:\n")[0] + "criteria:\n" + "".join(block.format(n=n) for n in range(MAX_CRITERIA + 1))
    assert f"criteria has {MAX_CRITERIA + 1} entries; the limit is {MAX_CRITERIA}" in refused(text).message


def test_anchors_and_aliases_are_refused():
    scale = "    grades:\n      - {label: Bad, value: 1}\n      - {label: Good, value: 5}\n"
    text = replace("    grades:\n", "    grades: &scale\n").replace(
        "    weight: 0.3\n" + scale + "  - id: harmless", "    weight: 0.3\n    grades: *scale\n  - id: harmless"
    )
    error = refused(text)
    assert error.line == 12 and "anchors and aliases" in error.message


def test_yaml_syntax_error_names_its_line():
    error = refused(replace("    weight: 0.3\n", "    weight: [0.3\n"))
    assert error.line is not None and 11 <= error.line <= 13 and "not valid YAML" in error.message


def test_unquoted_no_is_read_as_false_and_said_so():
    error = refused(POINTS.replace('{label: "No", value: 0}', "{label: No, value: 0}"))
    assert "was read by YAML as false: put it in quotes" in error.message


def test_grade_value_checks():
    assert "two grades with value 5" in refused(replace("{label: Bad, value: 1}", "{label: Bad, value: 5}")).message
    assert "grade label 'bad' twice" in refused(replace("{label: Good, value: 5}", "{label: bad, value: 5}")).message
    assert (
        "reads as a number other than its value"
        in refused(replace("{label: Good, value: 5}", '{label: "4", value: 5}')).message
    )
    two_zeros = "{label: Bad, value: 0}\n      - {label: Good, value: 0.0}"
    assert (
        "two grades with value 0"
        in refused(replace(two_zeros.replace("0}", "1}", 1).replace("0.0", "5"), two_zeros)).message
    )
    assert "between 0 and 1e+06" in refused(replace("{label: Bad, value: 1}", "{label: Bad, value: -1}")).message


def test_mode_specific_keys():
    assert "points are for point_deduction mode" in refused(replace("weight: 0.3", "points: 3")).message
    assert "weight is for grading_scale mode" in refused(POINTS.replace("points: 10", "weight: 1")).message
    assert "needs max_score" in refused(POINTS.replace("max_score: 100\n", "")).message
    assert (
        "max_score is for point_deduction"
        in refused(replace("pass_threshold: 0.7", "max_score: 5\npass_threshold: 0.7")).message
    )
    error = refused(POINTS.replace('{label: "Yes", value: 1}', '{label: "Yes", value: 1.5}'))
    assert "must be a whole number" in error.message


def test_missing_threshold_and_bad_harshness():
    assert "missing 'pass_threshold'" in refused(replace("pass_threshold: 0.7\n", "")).message
    error = refused(replace("pass_threshold: 0.7\n", "pass_threshold: 0.7\nharshness: brutal\n"))
    assert error.line == 7 and "harshness must be one of lenient, balanced, strict" in error.message


def test_missing_file_and_unknown_shipped_name():
    from evaluation.errors import NotFoundError

    with pytest.raises(NotFoundError, match="shipped: helpfulness, milo-qa"):
        load_rubric("no-such-rubric")
