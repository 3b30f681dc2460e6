"""Running a rubric over items: one judge call per item and criterion, answers parsed, scores and statuses."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.errors import InvalidInputError
from evaluation.llm.errors import EndpointAuthError
from evaluation.rubrics.answers import parse_answer, truncate_raw, truncate_words
from evaluation.rubrics.prompts import PROMPT_VERSION, criterion_messages
from evaluation.rubrics.schema import FIELD_NAMES, MAX_FIELD_CHARS, MAX_ID_CHARS, Rubric
from evaluation.rubrics.scoring import Status, rubric_score, status_of

Messages = list[dict[str, str]]
Ask = Callable[[list[Messages]], Sequence[Any]]
"""Sends many chat requests, returns one answer per request in order: its text, or the exception it failed with."""
Progress = Callable[[int, int], None]
GradeStatus = Literal["graded", "unparseable", "error"]

MAX_ITEMS = 1_000_000
MAX_ID_VALUE_CHARS = 512
ERROR_CHARS = 300
RESULT_KEYS = frozenset({"kind", "rubric", "signature", "score", "status", "criteria"})
"""Keys of a result line; an item's id keys sit beside them, so they may not be any of these."""


@dataclass(frozen=True)
class CriterionResult:
    """One criterion's outcome for one item: graded (label, value, explanation), unparseable or error."""

    criterion: str
    status: GradeStatus
    grade: str | None = None
    value: float | None = None
    explanation: str | None = None
    explanation_truncated: bool = False
    problem: str | None = None  # why unparseable, or the error's message
    raw: str | None = None  # the start of an unparseable answer

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if value is not None}


@dataclass(frozen=True)
class RubricResult:
    """A rubric's verdict on one item: per-criterion results, the score (None unless every criterion was
    graded) and PASSED/REDO. `ids` are the item's identifying keys (prompt_id, system, rater, ...), kept."""

    ids: dict[str, str]
    criteria: tuple[CriterionResult, ...]
    score: float | None
    status: Status | None
    rubric: str  # id@version
    signature: str

    @property
    def graded(self) -> bool:
        return self.score is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ids,
            "rubric": self.rubric,
            "signature": self.signature,
            "score": self.score,
            "status": self.status,
            "criteria": [result.to_dict() for result in self.criteria],
        }


def rubric_signature(rubric: Rubric) -> str:
    """What produced a score, to reproduce it: rubric id, version, content hash and prompt template version."""
    return f"rubric:{rubric.id}|v{rubric.version}|sha256={rubric.digest[:16]}|prompt=v{PROMPT_VERSION}"


def check_items(rubric: Rubric, items: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Every item has each field the rubric shows the judge, as bounded text; other keys are ids (kept)."""
    if len(items) > MAX_ITEMS:
        raise InvalidInputError(f"{len(items):,} items; the limit is {MAX_ITEMS:,}")
    ids: list[dict[str, str]] = []
    for index, item in enumerate(items):
        where = f"item {index + 1}"
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"{where} is not a mapping of field names to text")
        item_ids = {}
        for key, value in item.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidInputError(f"{where}: key {key!r} must name a text value")
            limit = MAX_FIELD_CHARS if key in FIELD_NAMES else MAX_ID_VALUE_CHARS
            if len(key) > MAX_ID_CHARS or len(value) > limit:
                raise InvalidInputError(f"{where}: field {key[:MAX_ID_CHARS]!r} is longer than {limit:,} characters")
            if "\x00" in value or (key not in FIELD_NAMES and _has_control(value)):
                raise InvalidInputError(f"{where}: field {key!r} contains a control character")
            if key in RESULT_KEYS:
                raise InvalidInputError(f"{where}: {key!r} cannot be an id key (results use it)")
            if key not in FIELD_NAMES:
                item_ids[key] = value
        missing = [name for name in rubric.fields if name not in item]
        if missing:
            label = ", ".join(f"{k}={v}" for k, v in item_ids.items())
            raise InvalidInputError(
                f"{where}{f' ({label})' if label else ''} has no {', '.join(missing)}, "
                f"which rubric {rubric.id!r} shows the judge (fields: {', '.join(rubric.fields)})"
            )
        ids.append(item_ids)
    return ids


def grade_items(
    rubric: Rubric,
    items: Sequence[Mapping[str, str]],
    ask_or_client: Ask | Any,
    *,
    progress: Progress | None = None,
    chunk_size: int = 256,
) -> list[RubricResult]:
    """Grade every item with `rubric`: one judge call per item and criterion; results in item order.

    items: mappings with the rubric's `fields` (`context`, `response`, `reference`; all checked before any call)
        as text, plus any identifying keys (`prompt_id`, `system`, `rater`, ...) which are kept in each result's
        `ids`. The text graded need not come from a system: MILO's QA use grades a rater's free-text answer as
        `response`.
    ask_or_client: an `evaluation.llm.ChatClient` (its `complete_many` is used), or any callable taking a list
        of chat message lists and returning one answer per request: the text, or the exception it failed with.
    progress: called with (calls done, calls in all) after each chunk of `chunk_size` calls.

    A criterion is `graded`, `unparseable` (raw answer kept, truncated; never guessed) or `error` (the call
    failed); an item's score and status are None unless every criterion was graded. A refused key (HTTP 401/403)
    stops the run by raising.
    """
    ids = check_items(rubric, items)
    requests = [criterion_messages(rubric, criterion, item) for item in items for criterion in rubric.criteria]
    answers = _ask_all(ask_or_client, requests, progress, chunk_size)
    auth = next((answer for answer in answers if isinstance(answer, EndpointAuthError)), None)
    if auth is not None:
        raise auth
    signature = rubric_signature(rubric)
    per_item = len(rubric.criteria)
    return [
        _item_result(rubric, item_ids, answers[index * per_item : (index + 1) * per_item], signature)
        for index, item_ids in enumerate(ids)
    ]


def _ask_all(ask_or_client: Ask | Any, requests: list[Messages], progress: Progress | None, chunk: int) -> list[Any]:
    """Every request's answer in order: text or exception. A ChatClient gets them all at once (it runs them
    `concurrency` at a time and reports each as it finishes); a plain callable gets chunks of `chunk`."""
    total = len(requests)
    complete_many = getattr(ask_or_client, "complete_many", None)
    if complete_many is not None:
        done = 0

        def on_result(index: int, result: Any) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, total)

        replies = complete_many(requests, on_result=on_result)
        return [reply if isinstance(reply, BaseException) else reply.text for reply in replies]
    if not callable(ask_or_client):
        raise TypeError("grade_items needs a ChatClient or a callable asking the judge")
    answers: list[Any] = []
    for start in range(0, total, max(1, chunk)):
        batch = requests[start : start + max(1, chunk)]
        replies = list(ask_or_client(batch))
        if len(replies) != len(batch):
            raise RuntimeError(f"the judge returned {len(replies)} answers to {len(batch)} requests")
        answers.extend(replies)
        if progress is not None:
            progress(len(answers), total)
    return answers


def _item_result(rubric: Rubric, item_ids: dict[str, str], replies: Sequence[Any], signature: str) -> RubricResult:
    results = tuple(_criterion_result(rubric, index, reply) for index, reply in enumerate(replies))
    values = {result.criterion: result.value for result in results if result.value is not None}
    score = rubric_score(rubric, values) if len(values) == len(rubric.criteria) else None
    return RubricResult(
        ids=item_ids,
        criteria=results,
        score=score,
        status=status_of(rubric, score) if score is not None else None,
        rubric=f"{rubric.id}@{rubric.version}",
        signature=signature,
    )


def _criterion_result(rubric: Rubric, index: int, reply: Any) -> CriterionResult:
    criterion = rubric.criteria[index]
    if isinstance(reply, BaseException):
        message = getattr(reply, "message", None) or str(reply) or type(reply).__name__
        return CriterionResult(criterion.id, "error", problem=truncate_raw(message)[:ERROR_CHARS])
    if not isinstance(reply, str):
        return CriterionResult(criterion.id, "error", problem=f"the judge gave no text ({type(reply).__name__})")
    parsed = parse_answer(reply, criterion)
    if parsed.option is None:
        return CriterionResult(criterion.id, "unparseable", problem=parsed.problem, raw=truncate_raw(reply))
    explanation, cut = truncate_words(parsed.explanation, rubric.max_explanation_words)
    return CriterionResult(
        criterion.id,
        "graded",
        grade=parsed.option.label,
        value=parsed.option.value,
        explanation=explanation,
        explanation_truncated=cut,
    )


def _has_control(value: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in value)
