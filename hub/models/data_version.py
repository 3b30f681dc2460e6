"""Data versions of the public read side: one row per scope, bumped in the same transaction as every write that
changes what public pages show, and read once per public request to key the cached pages (hub.services.publishing.
read_side).

The bump is one hook on every ORM session, registered when the models are imported: a flush that adds, deletes or
changes a row of any table outside PRIVATE_TABLES (changes to PRIVATE_COLUMNS alone do not count), and a bulk ORM
statement (`session.execute(update(Task)...)`) on such a table, mark the transaction, and its commit bumps the
`global` version once, as its last statement before COMMIT (so the version row's lock is never held while waiting
for another). New tables are public by default. A write the hook does not see (raw SQL, Core statements on a Table)
calls `bump(session)` itself before committing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import event, insert, update
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import ORMExecuteState, Session
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow

GLOBAL_SCOPE = "global"


class DataVersion(SQLModel, table=True):
    __tablename__ = "data_version"

    scope: str = Field(primary_key=True, max_length=120, description="What the version covers: 'global' (every page).")
    version: int = Field(default=0, description="Bumped by one by every transaction that changes public data.")
    changed_at: datetime = Field(default_factory=utcnow, description="When the last bump's transaction ran.")


# --- the hook: every ORM write to a public-affecting table bumps the global version in its own transaction ----------

# Tables no public page reads: sign-in, the audit log, the job outbox, rater invites, and this table itself.
PRIVATE_TABLES = frozenset(
    {"apitoken", "browsersession", "auditentry", "outboxjob", "raterinvite", "data_version"}
    | {"notification", "outgoingmail", "passwordreset"}  # what the hub tells one person
    | {"judgingrun"}  # a judging run's state and progress, on admin pages only (its judgements are public rows)
    | {"ratingreason", "raterqarun", "raterqagrade", "raterqaadmingrade"}  # raters' reasons and their QA: admins only
)
# Columns only private pages show (an evaluation's liveness and progress, seen by the owner and admins).
PRIVATE_COLUMNS = frozenset(
    {
        ("submission", "heartbeat_at"),
        ("submission", "worker_id"),
        ("submission", "progress"),
        ("submission", "started_at"),
        ("submission", "attempts"),
        ("submission", "worker_losses"),
        ("submission", "updated_at"),
    }
)
_CHANGED = "data_version.changed_in"  # session.info key: the root transaction that changed public data


def bump(session: Session, scope: str = GLOBAL_SCOPE) -> None:
    """Bump the version when the session's current transaction commits (and not if it rolls back). The hook calls
    it for ORM writes; call it yourself after a write the hook cannot see (raw SQL, Core statements on tables).
    Only the `global` scope exists today."""
    if scope != GLOBAL_SCOPE:
        raise ValueError(f"unknown data version scope {scope!r}")
    session.info[_CHANGED] = session.get_transaction()


def _bump_now(session: Session, scope: str = GLOBAL_SCOPE) -> None:
    """The UPDATE, as the transaction's last statement before COMMIT: the row lock it takes (PostgreSQL) is held by
    a transaction that takes no other lock afterwards, so the one row serialises commits without deadlocks."""
    connection = session.connection()
    table = DataVersion.__table__  # type: ignore[attr-defined]
    now = utcnow()
    changed = connection.execute(
        update(table).where(table.c.scope == scope).values(version=table.c.version + 1, changed_at=now)
    )
    if changed.rowcount == 0:  # a database made without the migration's first row
        connection.execute(insert(table).values(scope=scope, version=1, changed_at=now))


def _changed_already(session: Session) -> bool:
    transaction = session.get_transaction()
    return transaction is not None and session.info.get(_CHANGED) is transaction


def _table_of(obj: object) -> str | None:
    table = getattr(type(obj), "__table__", None)
    return getattr(table, "name", None)


def _changes_public_data(obj: object, *, dirty: bool) -> bool:
    table = _table_of(obj)
    if table is None or table in PRIVATE_TABLES:
        return False
    if not dirty:
        return True
    state = sa_inspect(obj)
    changed = {attr.key for attr in state.attrs if attr.history.has_changes()}
    return any((table, column) not in PRIVATE_COLUMNS for column in changed)


def _after_flush(session: Session, _context: Any) -> None:
    """After the flush's own statements (the session's lists and histories still show what it wrote)."""
    if _changed_already(session):
        return
    if any(_changes_public_data(obj, dirty=False) for obj in (*session.new, *session.deleted)) or any(
        _changes_public_data(obj, dirty=True) for obj in session.dirty
    ):
        bump(session)


def _statement_columns(statement: Any) -> set[str] | None:
    """The columns an UPDATE sets, or None when that cannot be told."""
    values = getattr(statement, "_values", None)
    if not values:
        return None
    return {getattr(key, "key", str(key)) for key in values}


def _do_orm_execute(state: ORMExecuteState) -> None:
    """Bulk ORM statements (`session.execute(update(Task)...)`) skip the flush; they mark the transaction here."""
    if not (state.is_update or state.is_delete or state.is_insert) or state.bind_mapper is None:
        return
    table = getattr(state.bind_mapper.local_table, "name", "")
    if table in PRIVATE_TABLES or _changed_already(state.session):
        return
    columns = _statement_columns(state.statement) if state.is_update else None
    if columns is not None and all((table, column) in PRIVATE_COLUMNS for column in columns):
        return
    bump(state.session)


def _before_commit(session: Session) -> None:
    """The outermost commit: flush what is pending (the hooks above see it), then bump if anything public changed."""
    if session.in_nested_transaction():
        return
    session.flush()
    if _changed_already(session):
        _bump_now(session)


if not event.contains(Session, "after_flush", _after_flush):
    event.listen(Session, "after_flush", _after_flush)
    event.listen(Session, "do_orm_execute", _do_orm_execute)
    event.listen(Session, "before_commit", _before_commit)
