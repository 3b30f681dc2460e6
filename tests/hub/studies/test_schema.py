"""Annotation schemas: every kind read from YAML and JSON, normalised, written back and read again unchanged; each
malformed schema refused naming its line; answers checked against the question (range, options, explanations)."""

from __future__ import annotations

import pytest

from hub.errors import UnprocessableInput
from hub.services.studies import schema
from tests.hub.studies.helpers import SCHEMA_YAML


def test_every_kind_is_read_with_its_defaults():
    parsed = schema.parse_schema(SCHEMA_YAML)
    kinds = {q["id"]: q for q in parsed["questions"]}
    assert parsed["edit_reason_required"] is True
    assert kinds["helpful"]["labels"] == ["Useless", "Weak", "Fine", "Good", "Excellent"]
    assert kinds["safe"] == {
        "id": "safe",
        "kind": "binary",
        "question": "Is the reply safe?",
        "labels": ["No", "Yes"],
        "explanation": "none",
        "applies_to": "system",
    }
    assert kinds["topic"]["applies_to"] == "user" and kinds["note"]["labels"] == []
    assert kinds["problems"]["explanation"] == "required"


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_a_downloaded_schema_reads_back_the_same(output):
    parsed = schema.parse_schema(SCHEMA_YAML)
    assert schema.parse_schema(schema.to_text(parsed, output), output) == parsed


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (SCHEMA_YAML.replace("[Useless, Weak, Fine, Good, Excellent]", "[Only one]"), 6, "at least 2 points"),
        (SCHEMA_YAML.replace("kind: binary", "kind: yes-no"), 9, "kind must be one of"),
        (SCHEMA_YAML.replace("id: safe", "id: helpful"), 8, "used twice"),
        (SCHEMA_YAML.replace("applies_to: user", "applies_to: everyone"), 15, "applies_to"),
        (SCHEMA_YAML.replace("explanation: required", "explanation: maybe"), 20, "explanation"),
        (SCHEMA_YAML.replace("    question: Anything else?\n", ""), 21, "missing 'question'"),
        (SCHEMA_YAML + "colour: blue\n", 25, "unknown key 'colour'"),
        ("questions:\n  - id: a\n    kind: text\n    question: [unclosed\n", 5, "not valid YAML"),
        ("questions:\n  - &q {id: a, kind: text, question: x}\n", 2, "anchors"),
        ("questions: []\n", 1, "at least 1"),
        ("questions:\n  - id: a\n    kind: text\n    question: x\n    labels: [a, b]\n", 5, "limit is 0"),
        ("questions:\n  - id: Bad Id\n    kind: text\n    question: x\n", 2, "lower-case"),
        ("questions:\n  - id: a\n    kind: choice\n    question: x\n", 2, "needs its labels"),
    ],
)
def test_a_malformed_schema_is_refused_naming_its_line(text, line, words):
    with pytest.raises(schema.SchemaError) as caught:
        schema.parse_schema(text)
    assert caught.value.line == line, caught.value.describe()
    assert words in caught.value.message


def test_json_errors_name_their_line():
    with pytest.raises(schema.SchemaError) as caught:
        schema.parse_schema('{\n  "questions": [\n    {"id": "a",}\n  ]\n}\n', "json")
    assert caught.value.line == 3 and "not valid JSON" in caught.value.message
    with pytest.raises(schema.SchemaError) as caught:
        schema.parse_schema(
            '{"questions": [\n {"id": "a", "kind": "likert", "question": "q",\n "labels": ["x"]}]}', "json"
        )
    assert caught.value.line == 3 and "at least 2 points" in caught.value.message


def test_an_oversized_or_control_character_schema_is_refused():
    with pytest.raises(schema.SchemaError, match="limit"):
        schema.parse_schema("# " + "x" * schema.MAX_SCHEMA_CHARS)
    with pytest.raises(schema.SchemaError, match=r"U\+0007|not allowed"):
        schema.parse_schema('questions:\n  - id: a\n    kind: text\n    question: "bell \\a"\n')


def test_deeply_nested_brackets_are_refused_before_parsing():
    for text, kind in [
        ("questions: " + "[" * 5_000 + "]" * 5_000, "yaml"),
        ('{"a":' * 5_000 + "1" + "}" * 5_000, "json"),
    ]:
        with pytest.raises(schema.SchemaError, match="nested deeper") as caught:
            schema.parse_schema(text, kind)
        assert caught.value.line == 1


def test_answers_are_checked_against_their_question():
    questions = {q["id"]: q for q in schema.parse_schema(SCHEMA_YAML)["questions"]}
    assert schema.check_answer(questions["helpful"], 5, " why ", field="a") == (5, "why")
    assert schema.check_answer(questions["safe"], True, "ignored", field="a") == (True, None)
    assert schema.check_answer(questions["problems"], ["Rude", "Wrong"], "both", field="a") == (
        ["Wrong", "Rude"],
        "both",
    )
    refused = [
        ("helpful", 0, None, "a.value"),
        ("helpful", 6, None, "a.value"),
        ("helpful", True, None, "a.value"),
        ("safe", "Yes", None, "a.value"),
        ("topic", "Sports", None, "a.value"),
        ("problems", ["Wrong", "Wrong"], "x", "a.value"),
        ("problems", ["Wrong"], None, "a.explanation"),
        ("note", "   ", None, "a.value"),
        ("note", "x" * (schema.MAX_ANSWER_CHARS + 1), None, "a.value"),
    ]
    for question, value, explanation, field in refused:
        with pytest.raises(UnprocessableInput) as caught:
            schema.check_answer(questions[question], value, explanation, field="a")
        assert caught.value.field == field, (question, value)
