"""`chateval submit` as a real process against a real hub (uvicorn on 127.0.0.1), a dead port and plain HTTP servers
that are not hubs: every way it can fail has its documented exit code and a message that says what to do, and the
token never appears in what it prints."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlmodel import Session, select

from hub.models import Submission, User
from hub.services.accounts.accounts import set_disabled
from hub.services.submissions.results import read_responses
from hub.storage import get_storage
from tests.hub.conftest import DATASET, responses_file
from tests.hub.live_server import live_hub

CHATEVAL = Path(sys.executable).with_name("chateval")


def chateval_submit(url: str, token: str, *args: str | Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CHATEVAL_TOKEN", "CHATEVAL_HUB_URL")}
    command = [str(CHATEVAL), "submit", "--url", url, "--token", token, "--name", "cli bot", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def one_line(text: str) -> str:
    return " ".join(text.split())


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def hub(people) -> Iterator[str]:
    with live_hub(send_buffer=None) as (host, port):
        yield f"http://{host}:{port}"


@pytest.fixture
def good(tmp_path) -> Path:
    path = tmp_path / "mine.txt"
    path.write_bytes(responses_file())
    return path


class Answers(BaseHTTPRequestHandler):
    """Not a hub: `/busy` answers 503 with Retry-After (as a hub whose database is restarting does); anything else
    is a plain web server's 404."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        busy = self.path.startswith("/busy/")
        self.send_response(503 if busy else 404)
        body = b'{"error": "the database is busy", "field": null}' if busy else b"<h1>Not Found</h1>"
        self.send_header("Content-Type", "application/json" if busy else "text/html")
        self.send_header("Content-Length", str(len(body)))
        if busy:
            self.send_header("Retry-After", "30")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def other_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_missing_file_exits_4_before_anything_is_sent(tmp_path):
    missing = tmp_path / "nope.txt"
    result = chateval_submit(f"http://127.0.0.1:{dead_port()}", "ceh_secret", "--responses", f"{DATASET}={missing}")
    assert result.returncode == 4, result.stderr
    assert one_line(result.stderr) == f"error: {missing}: file not found"


def test_an_unreachable_hub_exits_8(good):
    url = f"http://127.0.0.1:{dead_port()}"
    token = "ceh_never-printed-0123456789"
    result = chateval_submit(url, token, "--responses", f"{DATASET}={good}")
    assert result.returncode == 8, result.stderr
    assert one_line(result.stderr).startswith(f"error: could not reach the hub at {url}: ConnectError:")
    assert token not in result.stderr + result.stdout


def test_a_rejected_token_exits_9(hub, good):
    token = "ceh_wrong-token-never-printed-0123456789"
    result = chateval_submit(hub, token, "--responses", f"{DATASET}={good}")
    assert result.returncode == 9, result.stderr
    assert one_line(result.stderr) == (
        f"error: the hub at {hub} refused the API token (HTTP 401: invalid or revoked API token); create a new "
        "token on the hub's account page and pass it with --token or CHATEVAL_TOKEN"
    )
    assert token not in result.stderr + result.stdout


def test_a_disabled_account_exits_9(hub, people, hub_env, good):
    with Session(hub_env) as session:
        owner = session.exec(select(User).where(User.email == "owner@example.org")).one()
        set_disabled(session, None, owner.id, disabled=True)
    result = chateval_submit(hub, people["owner"], "--responses", f"{DATASET}={good}")
    assert result.returncode == 9, result.stderr
    assert "refused the API token (HTTP 403: this account is disabled" in one_line(result.stderr)
    assert people["owner"] not in result.stderr + result.stdout


def test_a_refused_file_exits_3_with_the_hubs_message(hub, people, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("one line\n")
    result = chateval_submit(hub, people["owner"], "--responses", f"{DATASET}={short}")
    assert result.returncode == 3, result.stderr
    assert one_line(result.stderr) == (
        f"error: the hub refused the submission (HTTP 422): responses[{DATASET}]: short.txt: expected 120 lines "
        f"(one response per prompt of dataset {DATASET}), found 1"
    )


def test_blank_lines_are_refused_by_the_hub_unless_allow_empty(hub, people, hub_env, tmp_path):
    lines = responses_file().decode().splitlines()
    lines[11] = ""
    path = tmp_path / "gaps.txt"
    path.write_text("\n".join(lines) + "\n")
    refused = chateval_submit(hub, people["owner"], "--responses", f"{DATASET}={path}")
    assert refused.returncode == 3, refused.stderr
    assert f"responses[{DATASET}]: gaps.txt, line 12: blank line: an empty response" in one_line(refused.stderr)
    allowed = chateval_submit(hub, people["owner"], "--responses", f"{DATASET}={path}", "--allow-empty")
    assert allowed.returncode == 0, allowed.stderr
    assert f"({DATASET}): submitted" in allowed.stdout
    from evaluation.dataset import load_dataset

    with Session(hub_env) as session:
        submission = session.exec(select(Submission)).one()
        assert read_responses(get_storage(), submission, load_dataset(DATASET)) == lines  # read back as sent


def test_a_server_that_is_no_hub_exits_8(other_server, good):
    result = chateval_submit(f"{other_server}/somewhere", "ceh_x", "--responses", f"{DATASET}={good}")
    assert result.returncode == 8, result.stderr
    assert one_line(result.stderr) == (
        f"error: no ChatEval hub answers at {other_server}/somewhere (HTTP 404 for /api/submissions); check --url"
    )


def test_a_busy_hub_exits_8_and_says_when_to_try_again(other_server, good):
    result = chateval_submit(f"{other_server}/busy", "ceh_x", "--responses", f"{DATASET}={good}")
    assert result.returncode == 8, result.stderr
    assert one_line(result.stderr) == (
        f"error: the hub at {other_server}/busy could not take the submission (HTTP 503: the database is busy); "
        "try again in 30 s"
    )


def test_a_malformed_url_is_a_usage_error(good):
    result = chateval_submit("127.0.0.1:8000", "ceh_x", "--responses", f"{DATASET}={good}")
    assert result.returncode == 2
    assert "expected http://HOST[:PORT]" in result.stderr
