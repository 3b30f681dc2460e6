"""`chateval serve --port P` (what `make run PORT=P` runs) hands out invite links on port P unless HUB_PUBLIC_URL is
set, in which case that address is kept. Real server processes on free ports."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hub.settings import get_settings
from tests.hub.conftest import auth, new_experiment

CHATEVAL = Path(sys.executable).with_name("chateval")
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def invite_url_from_a_server(experiment_id: int, admin_token: str, **env_extra: str) -> tuple[str, int]:
    """Start `chateval serve` on a free port on the test's data folder, ask it for an invite, stop it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "HUB_PUBLIC_URL"}
    env.update(HUB_DATA_DIR=str(get_settings().data_dir), **env_extra)
    command = [str(CHATEVAL), "serve", "--port", str(port), "--no-embedded-worker"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/static/app.css", timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "server did not start"
                time.sleep(0.3)
        request = urllib.request.Request(
            f"{url}/api/experiments/{experiment_id}/invites",
            data=json.dumps({"label": "pilot"}).encode(),
            headers={**auth(admin_token), "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["url"], port
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def experiment_id(hub_env, people, baselines, admin_user) -> int:
    return new_experiment(hub_env, admin_user, baselines).id


def test_invite_links_follow_the_port_by_default(experiment_id, people):
    url, port = invite_url_from_a_server(experiment_id, people["admin"])
    assert url.startswith(f"http://127.0.0.1:{port}/rate/")


def test_a_set_public_url_is_kept(experiment_id, people):
    url, _ = invite_url_from_a_server(experiment_id, people["admin"], HUB_PUBLIC_URL="https://hub.example.org")
    assert url.startswith("https://hub.example.org/rate/")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_passes_port_to_serve():
    dry_run = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", "PORT=8123"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )  # --no-print-directory: under `make test` this make is a sub-make, which would print "Entering directory" lines
    serve_lines = [line for line in dry_run.stdout.splitlines() if "chateval serve" in line]
    assert len(serve_lines) == 1 and serve_lines[0].endswith(".venv/bin/chateval serve --demo --port 8123"), serve_lines
