"""What the study's judge is asked for MILO's assistance, and how its answer is read: pre-annotation suggestions
(one JSON object per message: a value, a confidence and an explanation per question) and real-time drafts."""

from __future__ import annotations

import json
import re
from typing import Any

from hub.errors import HubError
from hub.services.studies import schema as schemas

SUGGESTED_KINDS = ("binary", "likert", "choice", "multi")  # free text is MILO's real-time assistant's job
MAX_EXPLANATION_CHARS = 2_000
MAX_CONTEXT_MESSAGES = 20
MAX_CONTEXT_CHARS = 4_000  # per message: a long turn is cut, the judge's prompt stays bounded
FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


class MalformedAnswer(ValueError):
    """The judge's answer could not be read as the JSON asked for."""


def _transcript(path: list[dict[str, str]]) -> str:
    lines = []
    for number, message in enumerate(path[-MAX_CONTEXT_MESSAGES:]):
        who = "USER" if message["role"] == "user" else "SYSTEM"
        lines.append(f"[{number}] {who}: {message['content'][:MAX_CONTEXT_CHARS]}")
    return "\n".join(lines)


def _describe(question: dict[str, Any]) -> dict[str, Any]:
    kind, labels = question["kind"], question["labels"]
    answer = {
        "binary": "true or false" + (f" (false = {labels[0]!r}, true = {labels[1]!r})" if len(labels) == 2 else ""),
        "likert": f"an integer from 1 ({labels[0]!r}) to {len(labels)} ({labels[-1]!r})",
        "choice": f"exactly one of {labels}",
        "multi": f"a list of zero or more of {labels}",
    }[kind]
    return {"question_id": question["id"], "question": question["question"], "value": answer}


def suggestion_messages(path: list[dict[str, str]], questions: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The judge's request: the conversation up to the message (its last entry) and the questions to answer."""
    asked = [_describe(q) for q in questions]
    instructions = (
        "You help annotators of a conversation study. Answer each question about the LAST message of the "
        "conversation below, as a careful annotator would. Reply with JSON only, no other text:\n"
        '{"answers": [{"question_id": "...", "value": ..., "confidence": 0.0 to 1.0, "explanation": "one or two '
        'sentences"}]}\nwith one entry per question, where value is:\n' + json.dumps(asked, indent=1)
    )
    return [
        {"role": "system", "content": instructions},
        {"role": "user", "content": "Conversation:\n" + _transcript(path)},
    ]


def _json_object(text: str) -> dict[str, Any]:
    try:
        data = json.loads(FENCE.sub("", text.strip()))
    except ValueError as exc:
        raise MalformedAnswer("the judge's answer is not JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
        raise MalformedAnswer("the judge's answer has no 'answers' list")
    return data


def read_suggestions(text: str, questions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per question id: {"value", "confidence", "explanation"} or {"error"} for a question the answer missed or
    answered out of range. MalformedAnswer when the whole answer is unreadable."""
    data = _json_object(text)
    given: dict[str, Any] = {}
    for entry in data["answers"]:
        if isinstance(entry, dict) and isinstance(entry.get("question_id"), str):
            given.setdefault(entry["question_id"], entry)
    result: dict[str, dict[str, Any]] = {}
    for question in questions:
        entry = given.get(question["id"])
        if entry is None:
            result[question["id"]] = {"error": "the judge did not answer this question"}
            continue
        confidence = entry.get("confidence")
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
            result[question["id"]] = {"error": "the judge gave no confidence between 0 and 1"}
            continue
        explanation = entry.get("explanation")
        if not isinstance(explanation, str):
            explanation = ""
        try:
            value, _ = schemas.check_answer(
                {**question, "explanation": "none"}, entry.get("value"), None, field="value"
            )
        except HubError as exc:
            result[question["id"]] = {"error": f"the judge's value is not {exc.message}"[:200]}
            continue
        clean = "".join(ch for ch in explanation if ch.isprintable() or ch in "\n\t")[:MAX_EXPLANATION_CHARS]
        result[question["id"]] = {"value": value, "confidence": float(confidence), "explanation": clean.strip()}
    return result


def draft_messages(path: list[dict[str, str]], purpose: str, question: dict[str, Any] | None) -> list[dict[str, str]]:
    """The judge's request for a real-time draft: an answer to a free-text question about the last message, or an
    improved version of the system's last reply (a post-edit)."""
    if purpose == "post_edit":
        task = (
            "Rewrite the SYSTEM's last reply in the conversation below so that it is correct, helpful and clear. "
            "Reply with the new text of that reply only."
        )
    else:
        assert question is not None
        task = (
            "An annotator must answer this question about the LAST message of the conversation below: "
            f"{question['question']!r}. Write a short draft answer they can edit. Reply with the answer text only."
        )
    return [{"role": "system", "content": task}, {"role": "user", "content": "Conversation:\n" + _transcript(path)}]


def clean_draft(text: str, limit: int) -> str:
    """The draft as shown: printable characters (and line breaks), at most `limit` characters."""
    kept = "".join(ch for ch in text if ch.isprintable() or ch in "\n\t")
    return kept.strip()[:limit]
