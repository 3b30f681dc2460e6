"""Database engine and sessions; the schema itself is created by Alembic migrations (hub/migrations)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from sqlalchemy import Engine, event
from sqlmodel import Session, create_engine

import hub.services.notifications.events  # noqa: F401  (the status-change hook: notifications on every session)
from hub.settings import get_settings


def make_engine(url: str, *, pool_size: int = 10, max_overflow: int = 10, pool_timeout: float = 30.0) -> Engine:
    if url.startswith("sqlite"):
        in_memory = url in ("sqlite://", "sqlite:///:memory:")  # one shared connection: no pool to size
        pool = {} if in_memory else {"pool_size": pool_size, "max_overflow": max_overflow, "pool_timeout": pool_timeout}
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **pool)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(connection, _record) -> None:  # WAL: readers never wait for the one writer
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(
        url, pool_pre_ping=True, pool_size=pool_size, max_overflow=max_overflow, pool_timeout=pool_timeout
    )


@lru_cache
def get_engine() -> Engine:
    settings = get_settings()
    if settings.resolved_database_url.startswith("sqlite:///"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return make_engine(
        settings.resolved_database_url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_timeout=settings.db_pool_timeout,
    )


def get_session() -> Iterator[Session]:
    with Session(get_engine()) as session:
        yield session
