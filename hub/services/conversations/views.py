"""What the pages and their JSON twins show of a conversation set: its state, aggregates by role, its conversations
(a page at a time), one conversation's turns with their text and values, and the per-turn download (JSONL in the
`chateval evaluate --conversations --json` shape: a run record, turn and conversation records, a summary)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, func, select

from hub.errors import NotFound
from hub.models import ConversationAggregate, ConversationScore, ConversationSet
from hub.services.platform.pagination import PageRequest, Pagination, paginate
from hub.storage import Storage

ROLE_ORDER = ("user", "assistant", "system", "tool")
CONVERSATION = "conversation"  # the role label of whole-conversation values


def set_json(conversation_set: ConversationSet, *, private: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": conversation_set.id,
        "name": conversation_set.name,
        "description": conversation_set.description,
        "status": conversation_set.status,
        "progress": conversation_set.progress,
        "conversations": conversation_set.conversations,
        "dataset": conversation_set.dataset_name,
        "is_public": conversation_set.is_public,
        "public": conversation_set.is_public and conversation_set.review == "approved",
        "metrics": conversation_set.metrics,
        "toolkit_version": conversation_set.toolkit_version,
        "created_at": conversation_set.created_at.isoformat(),
        "evaluated_at": conversation_set.evaluated_at.isoformat() if conversation_set.evaluated_at else None,
        "links": {
            "page": f"/conversation-sets/{conversation_set.id}",
            "download": f"/api/conversation-sets/{conversation_set.id}/turns.jsonl",
        },
    }
    if private:  # the owner and admins: the review, the file name and a failure's message (it can quote the file)
        data["review"] = {"state": conversation_set.review, "reason": conversation_set.review_reason}
        data["filename"] = conversation_set.filename
        data["error"] = conversation_set.error
        data["attempts"] = conversation_set.attempts
    return data


def aggregates(session: Session, set_id: int) -> list[dict[str, Any]]:
    """Per role (user, assistant, ..., then `conversation`), per system label and value: n, mean, sd, min, max."""
    rows = session.exec(select(ConversationAggregate).where(ConversationAggregate.set_id == set_id)).all()
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        role = row.role or CONVERSATION
        groups.setdefault(role, []).append(
            {
                "system": row.system,
                "metric": row.metric,
                "n": row.n,
                "mean": row.mean,
                "sd": row.sd,
                "min": row.min,
                "max": row.max,
            }
        )
    order = [*ROLE_ORDER, CONVERSATION]
    return [
        {"role": role, "rows": sorted(groups[role], key=lambda r: (r["system"] or "", r["metric"]))}
        for role in sorted(groups, key=lambda r: order.index(r) if r in order else len(order))
    ]


def conversations_page(
    session: Session, set_id: int, page: PageRequest | None
) -> tuple[list[dict[str, Any]], Pagination]:
    """The conversations in file order, a page at a time, with their whole-conversation values and turn counts."""
    whole = (ConversationScore.set_id == set_id, col(ConversationScore.turn).is_(None))
    total = session.exec(select(func.count()).select_from(ConversationScore).where(*whole)).one()
    pagination = paginate(total, page)
    rows = session.exec(
        select(ConversationScore)
        .where(*whole)
        .order_by(col(ConversationScore.position))
        .offset(pagination.start)
        .limit(pagination.per_page)
    ).all()
    turns = dict(
        session.exec(
            select(ConversationScore.conversation, func.count())
            .where(
                ConversationScore.set_id == set_id,
                col(ConversationScore.turn).is_not(None),
                col(ConversationScore.conversation).in_([r.conversation for r in rows]),
            )
            .group_by(col(ConversationScore.conversation))
        ).all()
    )
    items = [
        {
            "conversation": r.conversation,
            "system": r.system,
            "line": r.line,
            "scored_turns": turns.get(r.conversation, 0),
            "values": r.values,
        }
        for r in rows
    ]
    return items, pagination


def conversation_detail(
    session: Session, storage: Storage, conversation_set: ConversationSet, conversation_id: str
) -> dict[str, Any]:
    """One conversation: every message (its text read from the stored file's line) with the values of scored
    turns, the gates that skipped a metric, and the whole conversation's values."""
    rows = session.exec(
        select(ConversationScore)
        .where(ConversationScore.set_id == conversation_set.id, ConversationScore.conversation == conversation_id)
        .order_by(col(ConversationScore.turn).nulls_last())
    ).all()
    whole = next((r for r in rows if r.turn is None), None)
    if whole is None:
        raise NotFound(f"no conversation {conversation_id[:200]!r} in conversation set #{conversation_set.id}")
    scored = {r.turn: r for r in rows if r.turn is not None}
    messages = _messages(storage, conversation_set.file_sha256, whole.line)
    turns = []
    for index, message in enumerate(messages):
        row = scored.get(index)
        turns.append(
            {
                "turn": index,
                "role": message.get("role"),
                "content": message.get("content"),
                "scored": row is not None,
                "values": row.values if row else {},
                "skipped": row.skipped if row else {},
                "details": row.details if row else {},
            }
        )
    return {
        "set_id": conversation_set.id,
        "conversation": whole.conversation,
        "system": whole.system,
        "line": whole.line,
        "values": whole.values,
        "skipped": whole.skipped,
        "turns": turns,
    }


def _messages(storage: Storage, sha256: str, line: int) -> list[dict[str, Any]]:
    """The messages on `line` (1-based, as the reader counts: split on newlines) of a stored, checked file."""
    data = storage.get(sha256)
    raw = data.split(b"\n", line)[line - 1]
    text = raw.decode("utf-8").removeprefix("\ufeff").removesuffix("\r")
    messages = json.loads(text)["messages"]
    return [m for m in messages if isinstance(m, dict)]


def download_lines(session: Session, conversation_set: ConversationSet) -> list[str]:
    """The per-turn values as JSON Lines, built whole: a `run` record, then per conversation (file order) its
    `turn` records and its `conversation` record, then the `summary` (n, mean, sd, min, max per system, role and
    value), as `chateval evaluate --conversations --json` writes them."""
    run = {
        "kind": "run",
        "set_id": conversation_set.id,
        "name": conversation_set.name,
        "toolkit_version": conversation_set.toolkit_version,
        "conversations": conversation_set.conversations,
        "metrics": conversation_set.metrics,
    }
    lines = [_line(run)]
    table = ConversationScore.__table__  # type: ignore[attr-defined]
    query = (  # columns, not ORM objects: a large set has hundreds of thousands of rows
        sa.select(table.c.conversation, table.c.system, table.c.line, table.c.turn, table.c.role)
        .add_columns(table.c["values"], table.c.skipped, table.c.details)
        .where(table.c.set_id == conversation_set.id)
        .order_by(table.c.position, table.c.turn.nulls_last())
    )
    for row in session.execute(query):
        ids = {"conversation": row.conversation, "system": row.system}
        record: dict[str, Any]
        if row.turn is None:
            record = {"kind": "conversation", **ids, "line": row.line, "values": row.values}
        else:
            record = {"kind": "turn", **ids, "turn": row.turn, "role": row.role, "values": row.values}
        if row.skipped:
            record["skipped"] = row.skipped
        if row.details:
            record["details"] = row.details
        lines.append(_line(record))
    groups = session.exec(
        select(ConversationAggregate).where(ConversationAggregate.set_id == conversation_set.id)
    ).all()
    summary = [
        {"system": g.system, "role": g.role, "metric": g.metric, "n": g.n, "mean": g.mean, "sd": g.sd}
        | {"min": g.min, "max": g.max}
        for g in groups
    ]
    summary.sort(key=lambda r: (r["system"] or "", r["role"] or "", r["metric"]))
    lines.append(_line({"kind": "summary", "groups": summary}))
    return lines


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
