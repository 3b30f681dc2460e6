"""Every status change of a submission or an experiment becomes notifications, in the same transaction.

One hook on every ORM session (as hub.models.data_version does for the read side), so no code path that moves a
status can forget to tell anyone: a flush that adds a submission or experiment or changes its `status`, and a bulk
`session.execute(update(Submission)...)` that sets `status` (the evaluation's conditional updates), both write
Notification rows (and OutgoingMail rows when SMTP is configured) through the session's connection, committed or
rolled back with the change itself. Who is told (`messages`): the researcher whose submission or system it is, of
every change, with the reason on rejection or failure; admins, of submissions awaiting review, drafts awaiting
launch and experiments finishing."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import event, insert, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import ORMExecuteState, Session

from hub.models import Experiment, Notification, OutgoingMail, Submission, User
from hub.models.common import utcnow
from hub.services.notifications.messages import Change, Message, messages_for
from hub.settings import get_settings

log = logging.getLogger(__name__)
_QUEUED_MAIL = "notifications.mail_queued"  # session.info: this transaction queued mail (send a job after commit)
WATCHED = {"submission": Submission, "experiment": Experiment}


def _status_change(obj: object) -> tuple[str | None, str] | None:
    history = sa_inspect(obj).attrs.status.history
    if not history.has_changes():
        return None
    old = history.deleted[0] if history.deleted else None
    return (str(old) if old is not None else None), str(obj.status)  # type: ignore[attr-defined]


def _after_flush(session: Session, _context: Any) -> None:
    changes: list[Change] = []
    for obj in (*session.new, *session.dirty):
        kind = next((k for k, cls in WATCHED.items() if isinstance(obj, cls)), None)
        if kind is None:
            continue
        moved = (None, str(obj.status)) if obj in session.new else _status_change(obj)  # type: ignore[attr-defined]
        if moved is not None and moved[0] != moved[1]:
            changes.append(Change(kind, obj.id, moved[0], moved[1]))  # type: ignore[attr-defined]
    if changes:
        _notify(session, changes)


def _do_orm_execute(state: ORMExecuteState) -> Any:
    """A bulk UPDATE that sets `status`: the rows it matches are read before and after, inside its transaction."""
    if not state.is_update or state.bind_mapper is None:
        return None
    kind = next((k for k, cls in WATCHED.items() if state.bind_mapper.class_ is cls), None)
    values = getattr(state.statement, "_values", None) or {}
    if kind is None or "status" not in {getattr(key, "key", str(key)) for key in values}:
        return None
    table = WATCHED[kind].__table__  # type: ignore[attr-defined]
    connection = state.session.connection()
    where = getattr(state.statement, "whereclause", None)
    before: dict[int, Any] = (
        dict(connection.execute(select(table.c.id, table.c.status).where(where)).all()) if where is not None else {}
    )
    result = state.invoke_statement()
    if before:
        after: dict[int, Any] = dict(
            connection.execute(select(table.c.id, table.c.status).where(table.c.id.in_(list(before)))).all()
        )
        changes = [
            Change(kind, row_id, str(before[row_id]), str(status))
            for row_id, status in after.items()
            if str(status) != str(before[row_id])
        ]
        if changes:
            _notify(state.session, changes)
    return result


def _notify(session: Session, changes: list[Change]) -> None:
    """Write the notifications (and mail) of these changes, in the change's own transaction."""
    connection = session.connection()
    messages = [m for change in changes for m in messages_for(connection, change)]
    if messages:
        _write(connection, messages)
        if get_settings().smtp_host:
            session.info[_QUEUED_MAIL] = True


def _write(connection: Any, messages: list[Message]) -> None:
    now = utcnow()
    admins: list[tuple[int, str]] | None = None
    recipients: list[tuple[int, str]]
    rows, mails = [], []
    for message in messages:
        if message.to_admins:
            if admins is None:
                users: Any = User.__table__  # type: ignore[attr-defined]
                query = select(users.c.id, users.c.email).where(users.c.is_admin, users.c.disabled_at.is_(None))
                admins = [(row[0], row[1]) for row in connection.execute(query)]
            recipients = admins
        else:
            users = User.__table__  # type: ignore[attr-defined]
            email = connection.execute(select(users.c.email).where(users.c.id == message.user_id)).scalar()
            recipients = [(message.user_id, email)] if email is not None and message.user_id is not None else []
        for user_id, email in recipients:
            rows.append(
                {
                    "user_id": user_id,
                    "kind": message.kind,
                    "target": message.target[:80],
                    "subject": message.subject[:200],
                    "body": message.body[:5_000],
                    "link": message.link[:300],
                    "created_at": now,
                    "read_at": None,
                }
            )
            mails.append(
                {
                    "kind": "notification",
                    "to_address": email,
                    "subject": message.subject[:200],
                    "body": f"{message.body}\n\n{get_settings().public_url.rstrip('/')}{message.link}\n"[:10_000],
                    "state": "pending",
                    "attempts": 0,
                    "created_at": now,
                }
            )
    if rows:
        connection.execute(insert(Notification.__table__), rows)  # type: ignore[attr-defined]
    if mails and get_settings().smtp_host:
        connection.execute(insert(OutgoingMail.__table__), mails)  # type: ignore[attr-defined]


def _after_commit(session: Session) -> None:
    """Mail was queued: ask the queue to send it now (the periodic job sends it anyway if the queue is down)."""
    if not session.info.pop(_QUEUED_MAIL, False):
        return
    from hub import queue
    from hub.errors import QueueUnavailable

    try:
        queue.enqueue(queue.SEND_MAIL)
    except (QueueUnavailable, KeyError, RuntimeError):
        log.info("mail stays queued until the periodic send_mail job")


def _after_rollback(session: Session) -> None:
    session.info.pop(_QUEUED_MAIL, None)


if not event.contains(Session, "after_flush", _after_flush):
    event.listen(Session, "after_flush", _after_flush)
    event.listen(Session, "do_orm_execute", _do_orm_execute)
    event.listen(Session, "after_commit", _after_commit)
    event.listen(Session, "after_soft_rollback", lambda session, _previous: _after_rollback(session))
