"""Uploads under races and failures: concurrent identical uploads make one submission (a unique index, on SQLite and
PostgreSQL); unwritable storage answers 503 with nothing stored; temporary files of killed or failed writes go."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import db, queue, settings, storage
from hub.errors import StorageUnavailable
from hub.migrate import upgrade
from hub.models import Submission, SubmissionStatus, System
from hub.services.accounts.accounts import create_token, create_user
from hub.services.submissions import submissions as submission_service
from hub.web.app import create_app
from tests.hub.conftest import post

UPLOADS = 8


def _clear_caches() -> None:
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, hub_env, monkeypatch):
    """The hub on a migrated SQLite file (hub_env) or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield hub_env
        return
    monkeypatch.setenv("HUB_DATABASE_URL", request.getfixturevalue("postgres_url"))
    _clear_caches()
    upgrade()
    yield db.get_engine()
    db.get_engine().dispose()


def owner_token(engine) -> str:
    with Session(engine) as session:
        user = create_user(session, email="owner@example.org", password="correct horse battery", display_name="o")
        return create_token(session, user, name="cli")[1]


def test_concurrent_identical_uploads_make_one_submission(engine, monkeypatch):
    # Every upload passes the duplicate check before any of them inserts: the widest possible race.
    all_checked = threading.Barrier(UPLOADS)
    check = submission_service._refuse_duplicate

    def check_then_wait(*args, **kwargs):
        check(*args, **kwargs)
        # An upload slowed past the wait (a loaded machine) breaks the barrier: the others go on, still one winner.
        with contextlib.suppress(threading.BrokenBarrierError):
            all_checked.wait(timeout=60)

    monkeypatch.setattr(submission_service, "_refuse_duplicate", check_then_wait)
    token = owner_token(engine)
    with TestClient(create_app()) as client:
        with ThreadPoolExecutor(UPLOADS) as pool:
            replies = list(pool.map(lambda _: post(client, token), range(UPLOADS)))
        monkeypatch.setattr(submission_service, "_refuse_duplicate", check)
        sequential = post(client, token)  # the answer a duplicate sent later gets
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [201] + [409] * (UPLOADS - 1), [r.text for r in replies]
    with Session(engine) as session:
        [submission] = session.exec(select(Submission)).all()
        assert len(session.exec(select(System)).all()) == 1  # the losers' systems were rolled back too
    assert sequential.status_code == 409
    refusals = [r.json() for r in replies if r.status_code == 409]
    assert all(r == sequential.json() for r in refusals)
    assert f"as submission #{submission.id}" in sequential.json()["error"]
    assert sequential.json()["field"] == "responses[hub-open-v1]"


def test_the_same_file_may_come_again_after_a_rejection(engine):
    token = owner_token(engine)
    with TestClient(create_app()) as client:
        [first] = post(client, token).json()
        with Session(engine) as session:
            session.get(Submission, first["id"]).status = SubmissionStatus.rejected
            session.commit()
        again = post(client, token)
        assert again.status_code == 201, again.text
        assert post(client, token).status_code == 409


def test_unwritable_storage_answers_503_and_stores_nothing(hub_env, people, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the storage folder should be")  # unwritable even for root
    monkeypatch.setenv("HUB_STORAGE_URL", (blocker / "files").as_uri())
    _clear_caches()
    with TestClient(create_app()) as client:
        reply = post(client, people["owner"])
    assert reply.status_code == 503, reply.text
    assert "cannot store files" in reply.json()["error"] and "nothing was saved" in reply.json()["error"]
    assert int(reply.headers["Retry-After"]) > 0
    with Session(hub_env) as session:
        assert session.exec(select(Submission)).all() == []
        assert session.exec(select(System)).all() == []


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    local = storage.LocalStorage(tmp_path / "files")

    def disk_full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage.os, "fsync", disk_full)
    with pytest.raises(StorageUnavailable, match="No space left on device"):
        local.put(b"some responses\n")
    leftovers = [p for p in (tmp_path / "files").rglob("*") if p.is_file()]
    assert leftovers == []


def test_stale_temporary_files_are_removed_at_start_and_live_ones_kept(hub_env):
    local = storage.get_storage()
    sha256 = local.put(b"kept\n")
    folder = local.path(sha256).parent
    stale = folder / "tmpk1ll3d"  # a server killed mid-upload: truncated, old
    stale.write_bytes(b"trunc")
    hour_and_a_bit = time.time() - storage.STALE_TEMPORARY_AFTER_S - 60
    os.utime(stale, (hour_and_a_bit, hour_and_a_bit))
    live = folder / "tmpl1ve00"  # another process writing right now
    live.write_bytes(b"in progress")

    storage.get_storage.cache_clear()  # a new process starting
    assert storage.get_storage().get(sha256) == b"kept\n"
    assert not stale.exists()
    assert live.exists()
