"""A hub seeded once per test module and database (the `postgres_url` and `hub_env` fixtures are per test):
a researcher and an admin with API tokens and two public systems, for tests that only add refused requests or
that can share state (malformed input, schemathesis)."""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlmodel import Session

from hub import db, queue, settings, storage
from hub.migrate import upgrade
from hub.services.accounts.accounts import create_token, create_user
from hub.web.app import create_app
from tests.hub.conftest import POSTGRES_ADMIN_URL, submitted_system

PASSWORD = "correct horse battery"


def _clear_caches() -> None:
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


@contextmanager
def _database(kind: str):
    """A URL for a fresh database of `kind`, dropped afterwards (PostgreSQL skipped when it is down)."""
    if kind == "sqlite":
        yield ""  # the default: a SQLite file in HUB_DATA_DIR
        return
    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hub_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_ADMIN_URL}: {exc.orig}")
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def seeded_hub(kind: str, tmp_path_factory):
    """Yields (engine, tokens by role, system ids by name, app) for a migrated hub on `kind` (sqlite, postgresql)."""
    with _database(kind) as url, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(tmp_path_factory.mktemp("hub-data")))
        for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
            patch.delenv(name, raising=False)
        if url:
            patch.setenv("HUB_DATABASE_URL", url)
        _clear_caches()
        upgrade()
        engine = db.get_engine()
        tokens, ids = {}, {}
        with Session(engine) as session:
            for role in ("researcher", "admin"):
                user = create_user(
                    session, email=f"{role}@example.org", password=PASSWORD, display_name=role, is_admin=role == "admin"
                )
                tokens[role] = create_token(session, user, name="cli")[1]
            for name in ("echo", "retrieval"):
                ids[name] = submitted_system(session, name, user.id, True, [name] * 120).id
        try:
            yield engine, tokens, ids, create_app()
        finally:
            engine.dispose()
            _clear_caches()
