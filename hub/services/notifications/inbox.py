"""A user's in-app notifications: the newest first, the unread count for the navigation, marking them read."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from hub.models import Notification, User
from hub.models.common import utcnow

SHOWN = 200


def unread_count(session: Session, user: User) -> int:
    query = (
        select(func.count())
        .select_from(Notification)
        .where(Notification.user_id == user.id, col(Notification.read_at).is_(None))
    )
    return int(session.exec(query).one())


def newest(session: Session, user: User, limit: int = SHOWN) -> list[Notification]:
    query = (
        select(Notification).where(Notification.user_id == user.id).order_by(col(Notification.id).desc()).limit(limit)
    )
    return list(session.exec(query))


def listing(session: Session, user: User) -> dict[str, Any]:
    return {
        "unread": unread_count(session, user),
        "notifications": [
            {
                "id": n.id,
                "kind": n.kind,
                "target": n.target,
                "subject": n.subject,
                "body": n.body,
                "link": n.link,
                "created_at": n.created_at.isoformat(),
                "read": n.read_at is not None,
            }
            for n in newest(session, user)
        ],
    }


def mark_read(session: Session, user: User, ids: list[int] | None = None) -> None:
    """Mark the user's notifications read: the given ids (others' ids are ignored), or all."""
    statement = update(Notification).where(col(Notification.user_id) == user.id, col(Notification.read_at).is_(None))
    if ids is not None:
        statement = statement.where(col(Notification.id).in_(ids))
    session.exec(statement.values(read_at=utcnow()))  # type: ignore[call-overload]
    session.commit()
