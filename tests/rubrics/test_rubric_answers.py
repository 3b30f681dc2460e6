"""Judge answers: grades found in JSON, `Grade:` lines or a bare option; anything else unparseable, never guessed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.rubrics import load_rubric, parse_rubric
from evaluation.rubrics.answers import RAW_CHARS, parse_answer, truncate_raw, truncate_words

from .texts import POINTS, VALID

SCALE = parse_rubric(VALID.replace("{label: Bad, value: 1}", "{label: Bad, value: 1}\n      - {label: Fair, value: 3}"))
CRITERION = SCALE.criteria[0]  # Bad=1, Fair=3, Good=5
NUMERIC = load_rubric("helpfulness").criteria[0]  # labels "1".."5"
YES_NO = parse_rubric(POINTS).criteria[0]


@pytest.mark.parametrize(
    ("answer", "label", "explanation"),
    [
        ('{"grade": "Good", "explanation": "Clear and on topic."}', "Good", "Clear and on topic."),
        ('```json\n{"grade": "fair", "explanation": "Partly."}\n```', "Fair", "Partly."),
        ('Here is my verdict: {"Grade": 5, "Explanation": "Fine"} hope it helps', "Good", "Fine"),
        ('{"rating": "Bad"}', "Bad", None),
        ("Grade: Good\nExplanation: answers the question.", "Good", "answers the question."),
        ("**Grade:** Fair\n\nThe response is partly relevant.", "Fair", "The response is partly relevant."),
        ("Explanation: off topic.\nGrade: bad", "Bad", "off topic."),
        ("Rating = 3 (Fair)\nsome reason", "Fair", "some reason"),
        ("Good\nThe response is fine.", "Good", "The response is fine."),
        ("Grade: Good\nGrade: Good", "Good", None),
    ],
)
def test_accepted_forms(answer, label, explanation):
    parsed = parse_answer(answer, CRITERION)
    assert parsed.option is not None and parsed.option.label == label, parsed.problem
    assert parsed.explanation == explanation


@pytest.mark.parametrize(
    ("answer", "value"),
    [("Grade: 3", 3), ("Grade: 3/5", 3), ("Grade: 4 out of 5", 4), ('{"grade": 2}', 2), ('{"grade": "5"}', 5)],
)
def test_numeric_scale(answer, value):
    parsed = parse_answer(answer, NUMERIC)
    assert parsed.option is not None and parsed.option.value == value


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        ("The response is quite good overall.", "no grade found"),
        ("Grade: Excellent", "not one of the options"),
        ('{"grade": "Great", "explanation": "x"}', "not one of the options"),
        ('{"grade": 4}', "not one of the options"),  # 4 is no option of Bad=1, Fair=3, Good=5
        ('{"grade": true}', "not one of the options"),
        ('{"grade": null}', "not one of the options"),
        ("Grade: Good\nGrade: Bad", "two different grades"),
        ('{"grade": "Good"} {"grade": "Bad"}', "two different grades"),
        ("Grade: 5 (Bad)", "not one of the options"),  # value and label disagree
        ("Grade: 3/10", "not one of the options"),  # not this scale's denominator
        ("Good. The response is fine.", "no grade found"),  # a first line that is more than an option
        ("No, I cannot grade this.", "no grade found"),
    ],
)
def test_unparseable_is_never_guessed(answer, problem):
    parsed = parse_answer(answer, CRITERION)
    assert parsed.option is None
    assert problem in (parsed.problem or "")


def test_yes_no_answers_of_point_deduction():
    assert parse_answer("Yes\nOne central claim is false.", YES_NO).option.value == 1
    assert parse_answer('{"grade": "no", "explanation": "All correct."}', YES_NO).option.value == 0
    assert parse_answer("Grade: 0", YES_NO).option.label == "No"  # its value
    assert parse_answer("Maybe", YES_NO).option is None


def test_explanations_are_cut_to_the_limit_and_raw_answers_truncated():
    text, cut = truncate_words("one two three four five", 3)
    assert (text, cut) == ("one two three …", True)
    assert truncate_words("short", 3) == ("short", False)
    assert truncate_words("x" * 100, 2)[0] == "x" * 40 + " …"  # 20 characters a word at most
    assert len(truncate_raw("y" * 5000)) == RAW_CHARS + 2


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400))
def test_arbitrary_text_never_raises_and_any_grade_found_is_an_option(text):
    parsed = parse_answer(text, CRITERION)
    assert parsed.option is None or parsed.option in CRITERION.grades
    assert (parsed.option is None) == (parsed.problem is not None)


@settings(max_examples=200, deadline=None)
@given(index=st.integers(0, 2), explanation=st.text(max_size=200))
def test_json_answers_round_trip(index, explanation):
    option = CRITERION.grades[index]
    parsed = parse_answer(json.dumps({"grade": option.label, "explanation": explanation}), CRITERION)
    assert parsed.option == option
    assert parsed.explanation == (explanation.strip() or None)
