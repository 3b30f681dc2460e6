"""Request bodies over their route's limit are refused with 413 before they are parsed, over a real uvicorn
server: by Content-Length before the route runs, and while streaming when the body is chunked (the answer comes
before the client has finished sending). Nothing is parsed, spooled or stored for a refused request."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn
from sqlmodel import Session, func, select
from starlette.formparsers import MultiPartParser

from hub import db, settings, storage
from hub.models import System
from hub.services.accounts.accounts import create_token, create_user
from hub.web.app import create_app

FORM_LIMIT = 4096
UPLOAD_LIMIT = 20_000
BOUNDARY = "----hubtestboundary"


@pytest.fixture
def limits(hub_env, monkeypatch):
    monkeypatch.setenv("HUB_MAX_FORM_BYTES", str(FORM_LIMIT))
    monkeypatch.setenv("HUB_MAX_UPLOAD_BYTES", str(UPLOAD_LIMIT))
    settings.get_settings.cache_clear()
    with Session(hub_env) as session:
        user = create_user(session, email="r@example.org", password="correct horse battery", display_name="r")
        token = create_token(session, user, name="cli")[1]
    return hub_env, token


@pytest.fixture
def parsed(monkeypatch) -> list[int]:
    """Counts multipart parses (where Starlette spools uploads to disk)."""
    calls: list[int] = []
    original = MultiPartParser.parse

    async def counting(self):
        calls.append(1)
        return await original(self)

    monkeypatch.setattr(MultiPartParser, "parse", counting)
    return calls


@pytest.fixture
def server(limits):
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    hub_server = uvicorn.Server(config)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=hub_server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not hub_server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield listener.getsockname()
    hub_server.should_exit = True
    thread.join(timeout=10)
    listener.close()


def multipart(fields: dict[str, str], files: dict[str, bytes]) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ]
    for name, data in files.items():
        head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"; filename="f.txt"\r\n\r\n'
        parts.append(head.encode() + data + b"\r\n")
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def exchange(address, head: str, body_chunks, *, chunked: bool) -> tuple[int, str, bool]:
    """Send the request (chunked bodies stop without their last chunk), read the answer; returns (status, answer,
    whether the server answered before the whole body was sent)."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(head.encode())
        sent_all = True
        for chunk in body_chunks:
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk)
            except OSError:  # the server closed the connection after answering
                sent_all = False
                break
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer) < answer.find(b"\r\n\r\n") + 50:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    text = answer.decode("utf-8", "replace")
    return int(text.split(" ", 2)[1]), text, sent_all


def count_systems(engine) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(System)).one()


def stored_files() -> list[str]:
    root = storage.get_storage()
    folder = getattr(root, "root", None)
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder else []


def test_anonymous_oversized_form_is_refused_by_content_length_before_parsing(server, parsed):
    body = multipart({"email": "x@example.org", "password": "y" * 100}, {"junk": b"x" * 200_000})
    head = (
        f"POST /signup HTTP/1.1\r\nHost: hub\r\nAccept: text/html\r\nContent-Length: {len(body)}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
    )
    status, answer, _ = exchange(server, head, [body[:1000]], chunked=False)  # the rest is never sent
    assert status == 413, answer[:300]
    assert f"{FORM_LIMIT:,} bytes at most" in answer
    assert parsed == []


@pytest.mark.parametrize("path", ["/signup", "/rate/no-such-invite", "/api/experiments"])
def test_chunked_oversized_body_is_refused_while_streaming(server, path):
    head = (
        f"POST {path} HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
    )
    chunk = multipart({"a": "b" * 8000}, {})[:8192]
    limit = FORM_LIMIT * (8 if path == "/api/experiments" else 1)
    chunks = [chunk] * (limit // len(chunk) + 2) + [b"x" * 8192] * 200  # 1.6 MB more that must not be needed
    status, answer, _ = exchange(server, head, chunks, chunked=True)  # never sends the closing chunk
    assert status == 413, answer[:300]  # so the answer came while the body was still streaming
    assert f"{limit:,} bytes at most" in answer
    assert "connection: close" in answer.lower()  # the server reads no more of it


def test_oversized_upload_is_refused_and_nothing_is_stored(server, limits, parsed):
    engine, token = limits
    body = multipart({"name": "big bot"}, {"responses[hub-open-v1]": b"word\n" * (UPLOAD_LIMIT * 2)})  # 200 KB
    head = (
        f"POST /api/submissions HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
    )
    status, answer, _ = exchange(server, head, [body], chunked=False)
    assert status == 413, answer[:300]
    assert '"field":"body"' in answer.replace(" ", "")
    assert parsed == []
    assert count_systems(engine) == 0
    assert stored_files() == []


def test_bodies_within_the_limit_still_work(server, limits):
    _, token = limits
    body = b'{"label": "x"}'
    head = (
        f"POST /api/experiments/999/invites HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
    )
    status, answer, _ = exchange(server, head, [body], chunked=False)
    assert status in (403, 404), answer[:300]  # refused for who asks, not for the size


def test_limits_per_route():
    from hub.web.body_limit import body_limit

    settings.get_settings.cache_clear()
    assert body_limit("POST", "/signup") == settings.get_settings().max_form_bytes
    assert body_limit("POST", "/api/submissions") > settings.get_settings().max_upload_bytes
    assert body_limit("POST", "/api/experiments") == 8 * settings.get_settings().max_form_bytes
    db.get_engine.cache_clear()
