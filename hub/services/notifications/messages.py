"""What each status change says, and to whom: the researcher of every change, admins of work waiting for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from hub.models import Experiment, Submission, System
from hub.services.notifications.status_words import experiment_words, submission_words

SYSTEMS: Any = System.__table__  # type: ignore[attr-defined]
REASON_CHARS = 2_000  # a rejection reason or failure message quoted in a notification


@dataclass(frozen=True)
class Change:
    kind: str  # "submission" or "experiment"
    id: int
    old: str | None  # None: just created
    new: str


@dataclass(frozen=True)
class Message:
    kind: str
    target: str
    subject: str
    body: str
    link: str
    user_id: int | None = None  # one researcher, or
    to_admins: bool = False  # every active admin


def _row(connection: Any, model: Any, row_id: int) -> Any:
    return connection.execute(select(model.__table__).where(model.__table__.c.id == row_id)).mappings().first()


def _system_name(connection: Any, system_id: int) -> str:
    name = connection.execute(select(SYSTEMS.c.name).where(SYSTEMS.c.id == system_id)).scalar()
    return name or f"system #{system_id}"


def _submission(connection: Any, change: Change) -> list[Message]:
    row = _row(connection, Submission, change.id)
    if row is None:
        return []
    words = submission_words(change.new)
    name = _system_name(connection, row["system_id"])
    target, link = f"submission #{change.id}", f"/submissions/{change.id}"
    lines = [f"{name} on {row['dataset_name']}: {words.meaning}", f"Next: {words.next_step}"]
    if change.new == "rejected" and row["review_reason"]:
        lines.insert(1, f"Reason: {row['review_reason'][:REASON_CHARS]}")
    if change.new == "failed" and row["error"]:
        lines.insert(1, f"Error: {row['error'][:REASON_CHARS]}")
    owner = (
        row["owner_id"]
        or connection.execute(select(SYSTEMS.c.owner_id).where(SYSTEMS.c.id == row["system_id"])).scalar()
    )
    out = []
    if owner is not None:
        subject = f"Submission #{change.id} ({name}): {words.label}"
        out.append(Message(f"submission.{change.new}", target, subject, "\n".join(lines), link, user_id=owner))
    if change.new == "submitted":
        out.append(
            Message(
                "admin.review",
                target,
                f"Submission #{change.id} ({name}) awaits review",
                f"{name} on {row['dataset_name']} passed validation and waits for an admin's review.",
                "/admin/queue",
                to_admins=True,
            )
        )
    return out


def _experiment(connection: Any, change: Change) -> list[Message]:
    row = _row(connection, Experiment, change.id)
    if row is None:
        return []
    words = experiment_words(change.new)
    a, b = _system_name(connection, row["system_a_id"]), _system_name(connection, row["system_b_id"])
    title = row["title"] or f"{a} vs {b}"
    target, link = f"experiment #{change.id}", f"/experiments/{change.id}"
    body = f"{title} on {row['dataset_name']}: {words.meaning}\nNext: {words.next_step}"
    owners = {
        connection.execute(select(SYSTEMS.c.owner_id).where(SYSTEMS.c.id == system_id)).scalar()
        for system_id in (row["system_a_id"], row["system_b_id"])
    } - {None}
    subject = f"Experiment #{change.id} ({title}): {words.label}"
    out = [Message(f"experiment.{change.new}", target, subject, body, link, user_id=owner) for owner in sorted(owners)]
    if change.new == "draft" and row["submission_id"] is not None:
        out.append(
            Message(
                "admin.launch",
                target,
                f"Experiment #{change.id} ({title}) waits for launch",
                f"Drafted for submission #{row['submission_id']}; review its cost and launch it from the queue.",
                "/admin/queue#drafts",
                to_admins=True,
            )
        )
    if change.new == "closed":
        out.append(
            Message("admin.closed", target, f"Experiment #{change.id} ({title}) finished", body, link, to_admins=True)
        )
    return out


def messages_for(connection: Any, change: Change) -> list[Message]:
    return (_submission if change.kind == "submission" else _experiment)(connection, change)
