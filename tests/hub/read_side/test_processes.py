"""Several web processes on one database: each reads the data version from the database on every public request,
so a write through one process, or from outside every process (a worker), shows on the next view of every other."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
from sqlmodel import Session

from hub.models import System
from tests.hub.conftest import DATASET, auth

ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def web_process(log: Path):
    """`uvicorn hub.web.app:create_app --factory` as users run it, on the test's HUB_* settings; yields its URL."""
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "hub.web.app:create_app", "--factory", "--port", str(port)]
    command += ["--host", "127.0.0.1", "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/static/app.css", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the web process did not start"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _names(url: str) -> set[str]:
    reply = httpx.get(f"{url}/api/leaderboards/{DATASET}", timeout=30)
    assert reply.status_code == 200, reply.text
    return {row["system_name"] for row in reply.json()["rows"]}


def test_two_web_processes_show_every_write_on_their_next_view(hub_env, baselines, people, tmp_path):
    with ExitStack() as stack:
        one, two = (stack.enter_context(web_process(tmp_path / f"web-{n}.log")) for n in (1, 2))
        for url in (one, two, one, two):  # both caches hold the page
            assert _names(url) == {"echo", "retrieval"}
            assert httpx.get(f"{url}/api/experiments", timeout=30).json() == []

        with Session(hub_env) as session:  # a write from outside both processes (a worker, the CLI)
            system = session.get(System, baselines["retrieval"])
            system.name = "retrieval-2"
            session.add(system)
            session.commit()
        assert _names(two) == {"echo", "retrieval-2"}
        assert _names(one) == {"echo", "retrieval-2"}

        admin = auth(people["admin"])  # a write through process one, read through process two
        form = {"dataset": DATASET, "system_a_id": baselines["echo"], "system_b_id": baselines["retrieval"], "seed": 3}
        created = httpx.post(f"{one}/api/experiments", json=form, headers=admin, timeout=60)
        assert created.status_code == 201, created.text
        experiment_id = created.json()["experiment"]["id"]
        assert httpx.get(f"{two}/api/experiments", timeout=30).json() == []  # a draft is not public
        launched = httpx.post(f"{one}/api/experiments/{experiment_id}/launch", headers=admin, timeout=60)
        assert launched.status_code == 200, launched.text
        listed = httpx.get(f"{two}/api/experiments", timeout=30).json()
        assert [e["id"] for e in listed] == [experiment_id]
        page = httpx.get(f"{two}/experiments", headers={"Accept": "text/html"}, timeout=30)
        assert f"/experiments/{experiment_id}" in page.text
