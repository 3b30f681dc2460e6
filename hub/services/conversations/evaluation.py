"""The evaluation job of a conversation set: every registered function metric (the shipped ones, entry points and
the plugins the hub's workers load) over every turn by role and every conversation, in dependency order with
their gates, as `chateval evaluate --conversations` does, plus, when the set names a dataset, each rubric an admin
attached to that dataset, graded by its judge on the assistant turns (context = the earlier messages; every call
cached in the hub's judge-call cache); per-turn values and per-(system, role) aggregates written in one transaction.

A job claims its set with a conditional update (queued -> evaluating, attempts + 1), so a second job for the same
set does nothing; its results are written only if the set is still in the attempt it claimed."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from sqlalchemy import Engine, delete, insert, update
from sqlmodel import Session, col

import evaluation
from evaluation.errors import EvaluationError
from evaluation.function_metrics.conversations import Conversation, parse_conversations
from evaluation.function_metrics.registry import plan_for
from evaluation.function_metrics.rubric_turns import TURN_FIELDS, RubricTurns
from evaluation.function_metrics.runner import ConversationResult, Summary, score_conversations
from evaluation.llm.cache import CallCache
from evaluation.llm.client import ChatClient
from hub.errors import HubError
from hub.models import ConversationAggregate, ConversationScore, ConversationSet, Judge
from hub.models.common import utcnow
from hub.services.judging.registry import attachments, endpoint_config, parse_attached_rubric
from hub.settings import get_settings
from hub.storage import Storage

log = logging.getLogger(__name__)
INSERT_CHUNK = 5_000
PROGRESS_EVERY_S = 1.0
MAX_ERROR_CHARS = 10_000


def claim(engine: Engine, set_id: int) -> int | None:
    """queued -> evaluating; the attempt number this job now owns, or None when the set is not queued."""
    with Session(engine) as session:
        table = ConversationSet
        changed = session.execute(
            update(table)
            .where(col(table.id) == set_id, col(table.status) == "queued")
            .values(status="evaluating", attempts=table.attempts + 1, progress=0.0, updated_at=utcnow())
        )
        session.commit()
        if changed.rowcount == 0:  # type: ignore[attr-defined]
            return None
        row = session.get(ConversationSet, set_id)
        return row.attempts if row is not None else None


def score_rows(set_id: int, result: ConversationResult, position: int) -> list[dict[str, Any]]:
    """One row per scored turn and one for the whole conversation, in the CLI's record shape."""
    conversation = result.conversation
    base = {"set_id": set_id, "position": position, "conversation": conversation.id, "system": conversation.system}
    base["line"] = conversation.line
    rows = [
        {
            **base,
            "turn": index,
            "role": conversation.messages[index].role,
            "values": scored.values,
            "skipped": scored.skipped,
            "details": scored.details,
        }
        for index, scored in result.turns.items()
    ]
    whole = result.whole
    rows.append({**base, "turn": None, "role": None, "values": whole.values, "skipped": whole.skipped, "details": {}})
    return rows


def evaluate_set(engine: Engine, storage: Storage, set_id: int) -> str | None:
    """The job body: the set's final status, or None when another job had it (or it was not queued)."""
    attempt = claim(engine, set_id)
    if attempt is None:
        return None
    try:
        with Session(engine) as session:
            conversation_set = session.get(ConversationSet, set_id)
            assert conversation_set is not None
            sha256, filename = conversation_set.file_sha256, conversation_set.filename
            total, dataset = conversation_set.conversations, conversation_set.dataset_name
        conversations = parse_conversations(storage.get(sha256), name=filename)
        with ExitStack() as stack:
            nodes = plan_for(None, rubric_nodes(engine, dataset, stack) if dataset else [])
            return _score(engine, set_id, attempt, conversations, nodes, total)
    except (EvaluationError, HubError) as exc:
        return _fail(engine, set_id, attempt, exc.describe() if isinstance(exc, EvaluationError) else exc.message)
    except Exception as exc:  # a bug or a lost storage object: recorded on the set, then raised for the log
        _fail(engine, set_id, attempt, f"{type(exc).__name__}: {exc}")
        raise


def rubric_nodes(engine: Engine, dataset: str, stack: ExitStack) -> list[RubricTurns]:
    """The rubrics attached to `dataset` that can grade a turn (they show the judge context and response only),
    each graded by its judge through the judge-call cache the judging runs use (opened on `stack`)."""
    with Session(engine) as session:
        attached = [a for a in attachments(session, dataset) if a.kind == "rubric"]
        judges = {a.judge_id: session.get(Judge, a.judge_id) for a in attached}
        session.expunge_all()
    nodes: dict[str, RubricTurns] = {}
    cache: CallCache | None = None
    for attachment in attached:
        rubric = parse_attached_rubric(attachment.rubric_yaml or "")
        judge = judges.get(attachment.judge_id)
        if judge is None or any(name not in TURN_FIELDS for name in rubric.fields):
            continue  # a rubric showing the judge a reference answer has nothing to read on a conversation turn
        if cache is None:
            cache = stack.enter_context(CallCache(get_settings().data_dir / "llm-cache.sqlite3"))
        config = endpoint_config(judge)
        node = RubricTurns(rubric, ChatClient(config, cache=cache), judge=config.public_dict())
        nodes.setdefault(node.name, node)  # one grading per rubric id, by the judge attached first
    return list(nodes.values())


def _score(
    engine: Engine, set_id: int, attempt: int, conversations: list[Conversation], nodes: Sequence[Any], total: int
) -> str | None:
    summary, rows = Summary(), []
    done, last = 0, time.monotonic()

    def step(count: int) -> None:
        nonlocal done, last
        done += count
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            _set_progress(engine, set_id, attempt, done / max(1, total))

    for position, result in enumerate(score_conversations(conversations, nodes, on_done=step)):
        summary.add_result(result)
        rows.extend(score_rows(set_id, result, position))
    metrics = [node.to_dict() for node in nodes]
    return _write(engine, set_id, attempt, rows, summary.rows(), metrics)


def _current(session: Session, set_id: int, attempt: int) -> ConversationSet | None:
    row = session.get(ConversationSet, set_id, with_for_update=True)
    if row is None or row.status != "evaluating" or row.attempts != attempt:
        return None  # re-run or given up meanwhile: this run writes nothing
    return row


def _set_progress(engine: Engine, set_id: int, attempt: int, fraction: float) -> None:
    with Session(engine) as session:
        session.execute(
            update(ConversationSet)
            .where(col(ConversationSet.id) == set_id, col(ConversationSet.attempts) == attempt)
            .values(progress=min(1.0, fraction), updated_at=utcnow())
        )
        session.commit()


def _write(
    engine: Engine,
    set_id: int,
    attempt: int,
    rows: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
) -> str | None:
    """Replace the set's values and aggregates and mark it evaluated, all in one transaction."""
    with Session(engine) as session:
        row = _current(session, set_id, attempt)
        if row is None:
            return None
        session.execute(delete(ConversationScore).where(col(ConversationScore.set_id) == set_id))
        session.execute(delete(ConversationAggregate).where(col(ConversationAggregate.set_id) == set_id))
        for start in range(0, len(rows), INSERT_CHUNK):
            session.execute(insert(ConversationScore), rows[start : start + INSERT_CHUNK])
        if groups:
            session.execute(insert(ConversationAggregate), [{"set_id": set_id, **group} for group in groups])
        row.status, row.progress, row.error = "evaluated", 1.0, None
        row.metrics, row.toolkit_version = metrics, evaluation.__version__
        row.evaluated_at = row.updated_at = utcnow()
        session.add(row)
        session.commit()
    return "evaluated"


def _fail(engine: Engine, set_id: int, attempt: int, message: str) -> str | None:
    log.warning("conversation set %s failed: %s", set_id, message[:500])
    with Session(engine) as session:
        row = _current(session, set_id, attempt)
        if row is None:
            return None
        row.status, row.error, row.updated_at = "failed", message[:MAX_ERROR_CHARS], utcnow()
        session.add(row)
        session.commit()
    return "failed"
