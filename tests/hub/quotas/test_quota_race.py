"""Concurrent uploads cannot all squeeze under the daily quota: every upload passes the unlocked early check before
any of them inserts (a barrier), and the check under the owner's row lock still lets exactly the quota through, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import db, settings
from hub.models import Submission, System
from hub.services.submissions import quotas
from hub.web.app import create_app
from tests.hub.quotas.helpers import upload, valid_file
from tests.hub.test_upload_integrity import engine, owner_token  # noqa: F401 (the SQLite/PostgreSQL fixture)

UPLOADS = 8
QUOTA = 3


def test_concurrent_uploads_take_exactly_the_quota(engine, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HUB_SUBMISSIONS_PER_DAY", str(QUOTA))
    settings.get_settings.cache_clear()
    all_checked = threading.Barrier(UPLOADS)
    check, reserve = quotas.check, quotas.reserve
    locked = threading.local()

    def check_then_wait(*args, **kwargs):
        check(*args, **kwargs)
        if not getattr(locked, "on", False):  # the early check only; the re-check under the lock runs straight on
            with contextlib.suppress(threading.BrokenBarrierError):  # a slow upload breaks it: the race narrows
                all_checked.wait(timeout=60)

    def reserve_marked(*args, **kwargs):
        locked.on = True
        try:
            reserve(*args, **kwargs)
        finally:
            locked.on = False

    monkeypatch.setattr(quotas, "reserve", reserve_marked)
    monkeypatch.setattr(quotas, "check", check_then_wait)
    token = owner_token(engine)
    with TestClient(create_app()) as client, ThreadPoolExecutor(UPLOADS) as pool:
        replies = list(pool.map(lambda n: upload(client, token, valid_file(n), name=f"Bot {n}"), range(UPLOADS)))
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [201] * QUOTA + [429] * (UPLOADS - QUOTA), [r.text for r in replies]
    with Session(db.get_engine()) as session:
        assert len(session.exec(select(Submission)).all()) == QUOTA
        assert len(session.exec(select(System)).all()) == QUOTA  # the refused ones' systems were never kept
    refused = [r.json()["error"] for r in replies if r.status_code == 429]
    assert all(f"{QUOTA} submissions per UTC day, {QUOTA} used today, 0 left" in e for e in refused), refused
