"""Brute-force protection: failed logins (per account and per client address), sign-ups and unknown API tokens are
rate-limited with 429 and Retry-After; the right password is refused during a lockout; the per-account limit holds
across client addresses and across server processes (SQLite file in data_dir, or Redis)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from hub import settings
from hub.services.accounts import rate_limits
from hub.web.app import create_app
from tests.hub.conftest import auth

PASSWORD = "correct horse battery"  # the `people` fixture's
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
REDIS_URL = "redis://127.0.0.1:6379/0"
LIMITS = {
    "HUB_LOGIN_FAILURES_PER_ACCOUNT": "3/15 minutes",
    "HUB_LOGIN_FAILURES_PER_CLIENT": "5/15 minutes",
    "HUB_SIGNUPS_PER_CLIENT": "2/hour",
    "HUB_TOKEN_FAILURES_PER_CLIENT": "4/minute",
}


@pytest.fixture
def app(hub_env, monkeypatch):
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    settings.get_settings.cache_clear()
    return create_app()


def browser(app, address: str = "10.0.0.1") -> TestClient:
    return TestClient(app, headers={"accept": "text/html"}, follow_redirects=False, client=(address, 40000))


def log_in(client, password: str, email: str = "owner@example.org"):
    token = CSRF_FIELD.search(client.get("/login").text).group(1)
    return client.post("/login", data={"csrf_token": token, "email": email, "password": password})


def assert_locked_out(response, limit_minutes: int = 15) -> None:
    assert response.status_code == 429, response.text
    assert 1 <= int(response.headers["retry-after"]) <= limit_minutes * 60
    assert "too many failed logins" in response.text


def test_the_right_password_is_refused_after_too_many_wrong_ones(app, people):
    with browser(app) as client:
        page = client.get("/login")
        assert "Failed logins are limited to 3 in 15 minutes for one account" in page.text  # the page says what happens
        for _ in range(3):
            assert log_in(client, "wrong password!").status_code == 401
        assert_locked_out(log_in(client, "wrong password!"))
        assert_locked_out(log_in(client, PASSWORD))
        assert client.get("/account").status_code == 303  # not logged in
    with browser(app, "10.0.0.2") as elsewhere:  # another account from another address is unaffected
        assert log_in(elsewhere, PASSWORD, email="other@example.org").status_code == 303


def test_the_account_limit_holds_across_client_addresses(app, people):
    for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        with browser(app, address) as client:
            assert log_in(client, "wrong password!").status_code == 401
    with browser(app, "10.0.0.4") as fresh:
        assert_locked_out(log_in(fresh, PASSWORD))


def test_one_address_guessing_many_accounts_is_stopped(app, people):
    with browser(app) as client:
        for i in range(5):
            assert log_in(client, "wrong password!", email=f"guess{i}@example.org").status_code == 401
        assert_locked_out(log_in(client, PASSWORD))  # a real account, the right password, but from that address
    with browser(app, "10.0.0.9") as other:
        assert log_in(other, PASSWORD).status_code == 303


def test_sign_ups_are_limited_per_address_and_the_page_says_so(app, hub_env):
    with browser(app) as client:
        assert "Sign-ups are limited to 2 in one hour from one address" in client.get("/signup").text
        for i in range(3):
            token = CSRF_FIELD.search(client.get("/signup").text).group(1)
            form = {"csrf_token": token, "email": f"n{i}@example.org", "display_name": "n", "password": "p" * 12}
            answer = client.post("/signup", data=form)
            client.cookies.clear()
        assert answer.status_code == 429
        assert int(answer.headers["retry-after"]) > 0
        assert "too many sign-ups" in answer.text


def test_unknown_api_tokens_are_limited_per_address_and_lock_out_valid_ones_there(app, people):
    with TestClient(app, client=("10.0.0.5", 1)) as guesser, TestClient(app, client=("10.0.0.6", 1)) as other:
        for i in range(4):
            assert guesser.get("/api/submissions/1", headers=auth(f"ceh_guess{i}")).status_code == 401
        refused = guesser.get("/api/submissions/1", headers=auth(people["owner"]))
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json()["error"].startswith("too many invalid API tokens")
        assert other.get("/api/submissions/1", headers=auth(people["owner"])).status_code == 404  # a user there


# ---- across processes ----


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "hub.web.app:create_app", "--factory", "--port", str(port)]
    server = subprocess.Popen([*command, "--host", "127.0.0.1"], env=env, stderr=subprocess.DEVNULL)
    return server, f"http://127.0.0.1:{port}"


def _wait_until_up(server: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + 120  # generous: the test machine's cores are shared
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(url + "/login").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    server.kill()
    raise AssertionError(f"the server at {url} did not start")


@pytest.fixture(params=["sqlite", "redis"])
def two_servers(request, people, hub_env) -> Iterator[list[str]]:
    """Two server processes on the same data folder, counting in the default store (SQLite file) or in Redis
    (a real Redis at 127.0.0.1:6379, keys under a prefix unique to this test)."""
    env = {**os.environ, **LIMITS, "HUB_DATA_DIR": os.environ["HUB_DATA_DIR"]}
    prefix = f"chateval-test-{uuid.uuid4().hex}"
    if request.param == "redis":
        import redis

        try:
            redis.Redis.from_url(REDIS_URL).ping()
        except redis.exceptions.ConnectionError:
            pytest.skip(f"Redis not reachable at {REDIS_URL}")
        env |= {"HUB_QUEUE_URL": REDIS_URL, "HUB_RATE_LIMIT_PREFIX": prefix}
    servers = [_start(env) for _ in range(2)]
    for server, url in servers:
        _wait_until_up(server, url)
    yield [url for _, url in servers]
    for server, _ in servers:
        server.terminate()
        server.wait(timeout=10)
    if request.param == "redis":
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}:*"))
        assert keys, "the servers counted in Redis under the test's prefix"
        client.delete(*keys)


def test_the_account_limit_holds_across_two_server_processes(two_servers):
    first, second = (httpx.Client(base_url=url, headers={"accept": "text/html"}) for url in two_servers)
    with first, second:
        assert log_in(first, "wrong password!").status_code == 401
        assert log_in(second, "wrong password!").status_code == 401
        assert log_in(first, "wrong password!").status_code == 401
        assert_locked_out(log_in(second, PASSWORD))
        assert_locked_out(log_in(first, PASSWORD))


# ---- the SQLite store itself ----


HAMMER = """
import sys
from hub.services.accounts.rate_limits import SQLiteStorage
storage = SQLiteStorage("hub+sqlite://" + sys.argv[1])
for _ in range(100):
    storage.incr("shared", 60)
"""


def test_the_sqlite_store_counts_every_hit_of_concurrent_processes(tmp_path):
    path = str(tmp_path / "limits.db")
    workers = [subprocess.Popen([sys.executable, "-c", HAMMER, path]) for _ in range(4)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    storage = rate_limits.SQLiteStorage(f"hub+sqlite://{path}")
    assert storage.get("shared") == 400
    assert 0 < storage.get_expiry("shared") - time.time() <= 60
    assert storage.incr("fresh", 1) == 1
    time.sleep(1.1)  # a window that has ended starts again from zero
    assert storage.get("fresh") == 0
    assert storage.incr("fresh", 1) == 1
