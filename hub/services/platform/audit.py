"""The audit log: record who did what to which object, and read the latest entries back."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from hub.models import AuditEntry, User

MAX_TARGET = 200  # the column's length; PostgreSQL enforces it, SQLite would not


def record(
    session: Session, *, actor: User | None, action: str, target: str, detail: dict[str, Any] | None = None
) -> AuditEntry:
    """Add one entry and commit. `actor` is None for actions the system takes on its own."""
    if len(target) > MAX_TARGET:
        # A long target must not make the audited action fail; the full value can go in `detail`.
        target = target[: MAX_TARGET - 1] + "…"
    entry = AuditEntry(actor_id=actor.id if actor else None, action=action, target=target, detail=detail or {})
    session.add(entry)
    session.commit()
    session.refresh(entry)
    return entry


def recent(session: Session, limit: int = 100) -> list[AuditEntry]:
    """The newest `limit` entries, newest first (id breaks ties between entries made in the same instant)."""
    statement = select(AuditEntry).order_by(col(AuditEntry.created_at).desc(), col(AuditEntry.id).desc()).limit(limit)
    return list(session.exec(statement))
