"""Clients that ask for a large answer and never read it must not hold database connections: after 40 of them
stall on a download (or on a large page), the hub still answers `/api/overview` at once, on SQLite and PostgreSQL.

Real sockets against a real uvicorn server: a receive buffer of a few KB that is never read, and answers of
megabytes, so that each stalled answer stays stuck in the server's send path. Before the fix each stalled download
kept its export's session (and connection) open, and every page kept its request's session open until its body was
sent, so about 20 such clients took every pooled connection and the next page waited out the 30 s pool timeout."""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest
from sqlmodel import Session

from hub import db, queue, settings, storage
from hub.migrate import upgrade
from hub.services.accounts.accounts import create_token, create_user
from tests.hub.conftest import DATASET, submitted_system
from tests.hub.live_server import live_hub, stalled_readers, wait_until_answering

STALLED = 40
SYSTEMS = 16  # 16 systems x 120 prompts = 1,920 response rows: four export batches (500 rows)
LINE = "word " * 120  # ~600 bytes per response
LONG_LINE = "word " * 500  # the first two systems answer at ~2.5 KB: their comparison page is ~0.7 MB


def _clear_caches() -> None:
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, hub_env, monkeypatch):
    """The hub's settings pointing at a migrated SQLite file or a fresh PostgreSQL database."""
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_url")
        monkeypatch.setenv("HUB_DATABASE_URL", url)
        db.get_engine().dispose()
        _clear_caches()
        upgrade()
    yield request.param
    db.get_engine().dispose()


@pytest.fixture
def system_ids(database) -> list[int]:
    with Session(db.get_engine()) as session:
        owner = create_user(session, email="owner@example.org", password="correct horse battery", display_name="o")
        return [
            submitted_system(session, f"bot-{n}", owner.id, True, [f"{n} {LONG_LINE if n < 2 else LINE}"] * 120).id
            for n in range(SYSTEMS)
        ]


def _settle(timeout: float) -> None:
    """Wait (at most `timeout`) until no database connection is checked out: the routes of the stalled requests have
    run (requests still queued for a request thread hold none; the first overview after this waits for them). With
    the defect this never happens: the stalled answers keep their connections, and every overview fails."""
    deadline = time.monotonic() + timeout
    while db.get_engine().pool.checkedout() and time.monotonic() < deadline:
        time.sleep(0.1)


def _overview_seconds(host: str, port: int) -> float:
    start = time.monotonic()
    with urllib.request.urlopen(f"http://{host}:{port}/api/overview", timeout=10) as response:
        assert response.status == 200
        response.read()
    return time.monotonic() - start


@pytest.mark.parametrize(
    "path",
    ["/api/downloads/responses.jsonl", "/api/downloads/responses.csv", "/compare/{dataset}?systems={two}"],
    ids=["download-jsonl", "download-csv", "compare-page"],
)
def test_stalled_readers_hold_no_database_connection(system_ids, path):
    path = path.format(dataset=DATASET, two=",".join(map(str, system_ids[:2])))
    with live_hub() as (host, port):
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=30) as response:
            assert response.status == 200
            size = len(response.read())
        assert size > 600_000, "the answer must be far larger than the socket buffers"
        readers = stalled_readers(host, port, path, STALLED)
        try:
            answering = wait_until_answering(readers, timeout=20)
            _settle(timeout=15)
            try:
                _overview_seconds(host, port)  # waits, if need be, for requests still queued for a thread (CPU)
                seconds = _overview_seconds(host, port)
            except OSError as exc:  # a timeout: the overview waited for a pooled connection
                pytest.fail(f"/api/overview did not answer with {answering} of {STALLED} readers stalled: {exc}")
            assert answering == STALLED, "every stalled reader got the start of its answer"
            assert seconds < 1.0, f"/api/overview took {seconds:.1f} s with {STALLED} stalled readers"
        finally:
            for reader in readers:
                reader.close()


def _stalled_uploads(host: str, port: int, token: str, count: int) -> list[socket.socket]:
    """`count` clients that start a 10 MB submission upload (headers and the first bytes) and then send nothing."""
    boundary = "stalledboundary"
    head = (
        f"POST /api/submissions HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {10 * 1024 * 1024}\r\n\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nslow bot\r\n'
    ).encode()
    uploads = []
    for _ in range(count):
        sock = socket.create_connection((host, port))
        sock.sendall(head)
        uploads.append(sock)
    return uploads


def test_stalled_uploads_hold_no_database_connection(database):
    """An upload is a client the route waits on too: the token is checked (a query) before the body is read, so
    the connection must go back to the pool before the route waits for the file."""
    with Session(db.get_engine()) as session:
        owner = create_user(session, email="owner@example.org", password="correct horse battery", display_name="o")
        token = create_token(session, owner, name="cli")[1]
    with live_hub() as (host, port):
        uploads = _stalled_uploads(host, port, token, STALLED)
        try:
            time.sleep(1.0)  # let the server take every request as far as it goes: waiting for the body
            _settle(timeout=15)
            try:
                _overview_seconds(host, port)
                seconds = _overview_seconds(host, port)
            except OSError as exc:
                pytest.fail(f"/api/overview did not answer with {STALLED} uploads stalled: {exc}")
            assert seconds < 1.0, f"/api/overview took {seconds:.1f} s with {STALLED} stalled uploads"
        finally:
            for upload in uploads:
                upload.close()
