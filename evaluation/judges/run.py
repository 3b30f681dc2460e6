"""A judge's run over pairs: both orders of every pair asked through a `complete_many`-shaped callable, each
answer parsed, the two combined, and one row per pair in the shape of the hub's ratings download.

The rows carry every column of the ratings download (evaluation.judgements.RATINGS_EXPORT_FIELDS): `rater` is the
judge's identity (model, template version, endpoint host; never a key), `backend` is "judge", `left` is empty (both
orders were shown). After them come the judge's own columns (JUDGE_FIELDS), which readers of human ratings ignore:
each order's verdict in system terms (A, B, tie, unparseable or error), whether the two agreed, the template, both
responses' lengths in whitespace tokens and each raw answer (cut at MAX_ANSWER_KEPT characters). A pair the judge
could not grade (an order unreadable or failed) has item_kind "ungraded" and no outcome, so `chateval irt fit` and
the PPI command, which read only item_kind "pair", leave it out; identical responses are automatic ties, not asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from evaluation.errors import EvaluationError, InvalidInputError
from evaluation.judgements import RATINGS_EXPORT_FIELDS
from evaluation.judges.pairs import JudgePair
from evaluation.judges.templates import Message, PairwiseTemplate
from evaluation.judges.verdicts import ORDERS, Order, Verdict, combine, parse_verdict, to_system
from evaluation.llm.errors import EndpointAuthError

JUDGE_BACKEND = "judge"
UNGRADED_KIND = "ungraded"
MAX_ANSWER_KEPT = 2_000
MAX_MODEL_CHARS = 200
JUDGE_FIELDS = (
    "judge_order_ab",
    "judge_order_ba",
    "judge_consistent",
    "judge_template",
    "response_a_tokens",
    "response_b_tokens",
    "judge_answer_ab",
    "judge_answer_ba",
)
FIELDS = RATINGS_EXPORT_FIELDS + JUDGE_FIELDS
ORDER_STATES = ("A", "B", "tie", "unparseable", "error")

Complete = Callable[[list[list[Message]]], Sequence[object]]
"""Sends every conversation, returns one result per conversation in order: an object with a `text` (a completion)
or an exception (that call failed after its retries), as `evaluation.llm`'s ChatClient.complete_many does."""


@dataclass(frozen=True)
class JudgeIdentity:
    """Who judged: the model, the prompt template's version and the endpoint's host (never its key or path)."""

    model: str
    template: str
    host: str

    @classmethod
    def for_endpoint(cls, base_url: str, model: str, template: str) -> JudgeIdentity:
        model = model.strip()
        if not model or len(model) > MAX_MODEL_CHARS or not model.isprintable() or "|" in model:
            raise InvalidInputError(f"model: 1 to {MAX_MODEL_CHARS} printable characters, no '|', got {model!r}")
        host = urlsplit(base_url).hostname  # drops any user:password@ and the port's path
        if not host:
            raise InvalidInputError(f"endpoint: not a URL with a host: {base_url!r}")
        return cls(model, template, host)

    @property
    def rater(self) -> str:
        return f"judge:{self.model}|{self.template}|{self.host}"


@dataclass(frozen=True)
class RunSummary:
    """What a run did: pairs, calls, and how the pairs came out."""

    pairs: int
    auto_ties: int
    calls: int
    graded: int
    inconsistent: int
    ungraded: int
    unparseable_answers: int
    failed_calls: int


def _order_state(result: object) -> tuple[str, Verdict | None, str | None]:
    """(state, position verdict, raw answer) of one call's result."""
    text = getattr(result, "text", None)
    if isinstance(text, str):
        verdict = parse_verdict(text)
        return ("ok" if verdict else "unparseable"), verdict, text[:MAX_ANSWER_KEPT]
    if isinstance(result, EvaluationError):  # the client's errors carry no key (evaluation.llm.errors.scrub)
        return "error", None, f"{type(result).__name__}: {result.message}"[:MAX_ANSWER_KEPT]
    return "error", None, type(result).__name__


def _fatal(results: Sequence[object]) -> BaseException | None:
    """A refused key stops the run: every other call would be refused too."""
    return next((result for result in results if isinstance(result, EndpointAuthError)), None)


def judge_row(
    number: int,
    pair: JudgePair,
    judge: JudgeIdentity,
    created_at: str,
    answers: tuple[object, object] | None,
) -> dict[str, Any]:
    """The download row of one pair; `answers` holds the results of orders ab and ba (None: identical responses)."""
    states: dict[Order, str | None] = {"ab": None, "ba": None}
    raw: dict[Order, str | None] = {"ab": None, "ba": None}
    verdicts: dict[Order, Verdict | None] = {"ab": None, "ba": None}
    if answers is None:
        outcome: str | None = "tie"
        consistent: bool | None = None
    else:
        for order, result in zip(ORDERS, answers, strict=True):
            state, verdict, raw[order] = _order_state(result)
            verdicts[order] = to_system(verdict, order) if verdict else None
            states[order] = verdicts[order] or state
        combined = combine(verdicts["ab"], verdicts["ba"])
        outcome, consistent = combined.outcome, combined.consistent
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row.update(
        rating_id=number,
        dataset=pair.dataset,
        dataset_fingerprint=pair.dataset_fingerprint,
        prompt_id=pair.prompt_id,
        item_kind="pair" if outcome is not None else UNGRADED_KIND,
        system_a=pair.system_a.name,
        system_b=pair.system_b.name,
        system_a_id=pair.system_a.id,
        system_b_id=pair.system_b.id,
        outcome=outcome,
        auto_tie=answers is None,
        rater=judge.rater,
        backend=JUDGE_BACKEND,
        created_at=created_at,
        excluded=False,
        held_out=False,
        judge_order_ab=states["ab"],
        judge_order_ba=states["ba"],
        judge_consistent=consistent,
        judge_template=judge.template,
        response_a_tokens=len(pair.response_a.split()),
        response_b_tokens=len(pair.response_b.split()),
        judge_answer_ab=raw["ab"],
        judge_answer_ba=raw["ba"],
    )
    return row


def judge_pairs(
    pairs: Sequence[JudgePair],
    complete: Complete,
    *,
    judge: JudgeIdentity,
    template: PairwiseTemplate,
    now: datetime | None = None,
) -> tuple[list[dict[str, Any]], RunSummary]:
    """Ask both orders of every pair (identical responses excepted) in one batch; rows in the pairs' order."""
    if template.version != judge.template:
        raise ValueError(f"template {template.version!r} is not the judge's {judge.template!r}")
    asked = [pair for pair in pairs if not pair.identical]
    conversations = []
    for pair in asked:
        conversations.append(template.render(pair.context, pair.response_a, pair.response_b))
        conversations.append(template.render(pair.context, pair.response_b, pair.response_a))
    results = list(complete(conversations)) if conversations else []
    if len(results) != len(conversations):
        raise RuntimeError(f"the client returned {len(results)} results for {len(conversations)} conversations")
    fatal = _fatal(results)
    if fatal is not None:
        raise fatal
    created_at = (now or datetime.now(UTC)).isoformat()
    answers = iter(zip(results[0::2], results[1::2], strict=True))
    rows = [
        judge_row(n, pair, judge, created_at, None if pair.identical else next(answers))
        for n, pair in enumerate(pairs, start=1)
    ]
    if asked and all(row["item_kind"] == UNGRADED_KIND for row in rows if not row["auto_tie"]):
        failures = [r for r in results if isinstance(r, BaseException)]
        if len(failures) == len(results):
            raise failures[0]  # nothing answered at all: report the endpoint's error, not a file of failures
    states = [row[f"judge_order_{o}"] for row in rows for o in ("ab", "ba") if not row["auto_tie"]]
    return rows, RunSummary(
        pairs=len(rows),
        auto_ties=sum(1 for row in rows if row["auto_tie"]),
        calls=len(conversations),
        graded=sum(1 for row in rows if row["item_kind"] == "pair" and not row["auto_tie"]),
        inconsistent=sum(1 for row in rows if row["judge_consistent"] is False),
        ungraded=sum(1 for row in rows if row["item_kind"] == UNGRADED_KIND),
        unparseable_answers=states.count("unparseable"),
        failed_calls=states.count("error"),
    )
