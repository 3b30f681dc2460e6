"""Hub fixtures: a fresh data folder, migrated SQLite database and local storage for each test."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
import uuid
from contextlib import closing
from functools import lru_cache
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlmodel import Session

from evaluation.dataset import load_dataset
from hub import db, queue, settings, storage
from hub.services.accounts import accounts
from hub.services.accounts.accounts import create_token, create_user


def _clear_caches() -> None:
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


_MIGRATED_SQLITE: list[Path] = []  # the one SQLite file this test session migrated to head, copied for each test


def _migrated_sqlite_template() -> Path:
    """An SQLite database migrated to head once per test session: running the 15 migrations costs each test about a
    second (SQLite rebuilds tables and syncs every step), a copy of the result takes milliseconds. The migrations
    themselves are tested from empty in test_migrations.py."""
    from hub.migrate import upgrade

    if not _MIGRATED_SQLITE:
        folder = Path(tempfile.mkdtemp(prefix="hub-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        built, template = folder / "built.db", folder / "template.db"
        upgrade(f"sqlite:///{built}")
        with closing(sqlite3.connect(built)) as source, closing(sqlite3.connect(template)) as target:
            source.backup(target)  # one self-contained file, whatever is still in the write-ahead log
        _MIGRATED_SQLITE.append(template)
    return _MIGRATED_SQLITE[0]


def migrated_hub(tmp_path, monkeypatch, database_url: str | None = None):
    """HUB_DATA_DIR in a temporary folder, schema migrated on SQLite there (a copy of the session's migrated
    template) or on `database_url`; yields the engine. A module that runs on both databases overrides `hub_env` with a
    parametrized fixture that yields from this."""
    from hub.migrate import upgrade

    data_dir = tmp_path / "hub-data"
    monkeypatch.setenv("HUB_DATA_DIR", str(data_dir))
    for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        monkeypatch.delenv(name, raising=False)
    if database_url:
        monkeypatch.setenv("HUB_DATABASE_URL", database_url)
    _clear_caches()
    if database_url:
        upgrade()
    else:
        data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_migrated_sqlite_template(), data_dir / "hub.db")
        assert settings.get_settings().resolved_database_url == f"sqlite:///{data_dir / 'hub.db'}"
    yield db.get_engine()
    db.get_engine().dispose()
    _clear_caches()


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """HUB_DATA_DIR in a temporary folder, schema migrated; yields the engine."""
    yield from migrated_hub(tmp_path, monkeypatch)


DATASET = "hub-open-v1"


@lru_cache
def _password_hash(password: str) -> str:
    """One real argon2 hash per password per test session: hashing costs about 0.2 s of CPU (0.9 s wall under this
    machine's load), and `people` made three for every test that uses it. Logins still verify against real hashes."""
    return _ARGON2(password)


_ARGON2 = accounts.hash_password


@pytest.fixture
def people(hub_env, monkeypatch):
    """Tokens of an owner, another researcher and an admin (who share one password, so one hash)."""
    with monkeypatch.context() as patched, Session(hub_env) as session:
        patched.setattr(accounts, "hash_password", _password_hash)
        tokens = {}
        for role in ("owner", "other", "admin"):
            user = create_user(
                session,
                email=f"{role}@example.org",
                password="correct horse battery",
                display_name=role,
                is_admin=role == "admin",
            )
            tokens[role] = create_token(session, user, name="cli")[1]
    return tokens


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def responses_file(text_lines: list[str] | None = None) -> bytes:
    lines = text_lines if text_lines is not None else [p.references[0] for p in load_dataset(DATASET).prompts]
    return ("\n".join(lines) + "\n").encode()


def post(client, token, data=None, content=None, filename="mine.txt"):
    files = {f"responses[{DATASET}]": (filename, content if content is not None else responses_file(), "text/plain")}
    return client.post(
        "/api/submissions", headers=auth(token) if token else {}, data={"name": "My bot", **(data or {})}, files=files
    )


POSTGRES_ADMIN_URL = os.environ.get("HUB_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def postgres_url():
    """A fresh, empty PostgreSQL database for one test, dropped afterwards (skipped if PostgreSQL is down)."""
    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hub_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_ADMIN_URL}: {exc.orig}")
    yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def baselines(hub_env) -> dict[str, int]:
    """The echo and retrieval baselines on hub-open-v1, scored; name -> system id."""
    from sqlmodel import select

    from hub.models import System
    from hub.services.submissions.demo import seed_baselines

    seed_baselines(hub_env, storage.get_storage(), names=["echo", "retrieval"])
    with Session(hub_env) as session:
        return {s.name: s.id for s in session.exec(select(System))}


@pytest.fixture
def admin_user(people, hub_env):
    from sqlmodel import select

    from hub.models import User

    with Session(hub_env) as session:
        return session.exec(select(User).where(User.email == "admin@example.org")).one()


def new_experiment(engine, admin, system_ids: dict[str, int], **options):
    """A launched (unless launch=False) experiment of echo (A) vs retrieval (B) on hub-open-v1."""
    from hub.services.human import experiments

    launch = options.pop("launch", True)
    form = experiments.ExperimentForm(
        dataset=DATASET, system_a_id=system_ids["echo"], system_b_id=system_ids["retrieval"], seed=7, **options
    )
    with Session(engine) as session:
        experiment = experiments.create_experiment(session, admin, form, storage.get_storage())
        if launch:
            experiment = experiments.launch(session, admin, experiment.id)
        session.expunge(experiment)
        return experiment


def submitted_system(session: Session, name: str, owner_id: int, public: bool, lines: list[str]):
    """A researcher's system with an evaluated submission of `lines` to hub-open-v1 (no scores needed)."""
    from evaluation.dataset import load_dataset
    from hub.models import Submission, SubmissionStatus, System

    system = System(name=name, owner_id=owner_id, is_public=public)
    session.add(system)
    session.commit()
    session.add(
        Submission(
            system_id=system.id,
            dataset_name=DATASET,
            dataset_fingerprint=load_dataset(DATASET).fingerprint,
            responses_sha256=storage.get_storage().put(("\n".join(lines) + "\n").encode()),
            status=SubmissionStatus.evaluated,
        )
    )
    session.commit()
    return system


def human_paced(assignment, seconds: float = 90.0) -> None:
    """Backdate a claimed assignment's start, so that submitting it now looks like a person's pace: the rater
    screening flags under 2 s per judgement as too fast, and a flagged rater's judgements are held out."""
    from datetime import timedelta

    assignment.started_at = assignment.started_at - timedelta(seconds=seconds)
