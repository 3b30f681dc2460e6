"""Reading the study judge's suggestion answers: each question's value checked against the schema, a confidence in
[0, 1] required, anything unreadable refused as a whole (MalformedAnswer: the job retries, then records none)."""

from __future__ import annotations

import json

import pytest

from hub.services.studies.assistance_prompts import MalformedAnswer, read_suggestions, suggestion_messages

QUESTIONS = [
    {"id": "safe", "kind": "binary", "labels": ["No", "Yes"], "question": "Safe?", "explanation": "none",
     "applies_to": "system"},
    {"id": "helpful", "kind": "likert", "labels": ["Bad", "Fine", "Good"], "question": "Helpful?",
     "explanation": "required", "applies_to": "system"},
    {"id": "problems", "kind": "multi", "labels": ["Wrong", "Rude"], "question": "Problems?", "explanation": "none",
     "applies_to": "system"},
]  # fmt: skip


def _answer(*entries: dict) -> str:
    return json.dumps({"answers": list(entries)})


def test_values_are_checked_per_question():
    text = "```json\n" + _answer(
        {"question_id": "safe", "value": True, "confidence": 0.9, "explanation": "No harm.\x00\x07"},
        {"question_id": "helpful", "value": 4, "confidence": 0.5},
        {"question_id": "problems", "value": ["Rude", "Wrong"], "confidence": 1},
    ) + "\n```"  # fmt: skip
    got = read_suggestions(text, QUESTIONS)
    assert got["safe"] == {"value": True, "confidence": 0.9, "explanation": "No harm."}
    assert got["helpful"] == {"error": "the judge's value is not a point of the scale, 1 to 3"}
    assert got["problems"]["value"] == ["Wrong", "Rude"]  # in the schema's order, as answers are stored


@pytest.mark.parametrize("confidence", [None, 1.5, -0.1, True, "high"])
def test_a_confidence_outside_zero_to_one_is_no_suggestion(confidence):
    got = read_suggestions(_answer({"question_id": "safe", "value": False, "confidence": confidence}), QUESTIONS)
    assert got["safe"] == {"error": "the judge gave no confidence between 0 and 1"}
    assert got["helpful"] == {"error": "the judge did not answer this question"}


@pytest.mark.parametrize("text", ["Yes, it is safe.", "[]", '{"answers": {}}', '{"verdict": 1}', ""])
def test_unreadable_answers_are_refused_whole(text):
    with pytest.raises(MalformedAnswer):
        read_suggestions(text, QUESTIONS)


def test_the_request_names_every_question_and_the_last_message():
    messages = suggestion_messages([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
                                   QUESTIONS[:1])  # fmt: skip
    assert '"question_id": "safe"' in messages[0]["content"] and "true or false" in messages[0]["content"]
    assert messages[1]["content"].endswith("[1] SYSTEM: Hello")
