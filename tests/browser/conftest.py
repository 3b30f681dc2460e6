"""Browser-test fixtures: Debian's Chromium driven by Playwright, and a real `chateval serve --demo` with an admin."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
CHATEVAL = str(Path(sys.executable).with_name("chateval"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("HUB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HUB_REQUIRE_BROWSER=1 but Chromium is missing at {CHROMIUM}")
        pytest.skip(f"Chromium not installed at {CHROMIUM} (Debian package `chromium`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def _log_tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log at {log}: {exc})"


@contextmanager
def serving(env: dict[str, str], *args: str, log: Path | None = None) -> Iterator[str]:
    """`chateval serve ARGS` on a free port with `env`; yields its URL once it answers, stops it afterwards.

    The server writes to `log` (by default serve-PORT.log beside HUB_DATA_DIR, so in the test's tmp folder), never
    to a pipe that nobody reads: uvicorn's access log would fill it and block the server mid-test."""
    port = _free_port()
    if log is None:
        folder = Path(env["HUB_DATA_DIR"]).parent if env.get("HUB_DATA_DIR") else Path(tempfile.mkdtemp(prefix="hub-"))
        log = folder / f"serve-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as output:
        server = subprocess.Popen(
            [CHATEVAL, "serve", *args, "--port", str(port)], env=env, stdout=output, stderr=subprocess.STDOUT
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 90
            while True:
                if server.poll() is not None:
                    pytest.fail(f"hub exited with code {server.returncode} before answering; {log}:\n{_log_tail(log)}")
                try:
                    urllib.request.urlopen(f"{url}/openapi.json", timeout=2).close()
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        pytest.fail(f"hub did not start within 90 s; {log}:\n{_log_tail(log)}")
                    time.sleep(0.3)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=20)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A real `chateval serve --demo` on a free port with its own data folder, and an admin account."""
    data = tmp_path_factory.mktemp("hub-e2e")
    env = {**os.environ, "HUB_DATA_DIR": str(data / "hub"), "CHATEVAL_HOME": str(data / "home")}
    subprocess.run(
        [CHATEVAL, "admin", "create-user", "admin@example.org", "--admin", "--password-stdin"],
        input="admin-password-long\n",
        text=True,
        env=env,
        check=True,
        capture_output=True,
    )
    with serving(env, "--demo", log=data / "serve.log") as url:
        yield url


@pytest.fixture(scope="session")
def imported_chateval(tmp_path_factory, shared_data) -> Path:
    """A hub data folder holding the real ChatEval votes, imported once per session by the real `chateval ratings
    import-chateval` (about 9 s of CPU); modules that serve them copy it with `copy_of` instead of importing again."""
    data = tmp_path_factory.mktemp("hub-imported-chateval")
    env = {**os.environ, "HUB_DATA_DIR": str(data / "hub"), "CHATEVAL_HOME": str(data / "home")}
    votes = ["--votes", str(shared_data / "votes.csv"), "--prompts-dir", str(shared_data / "prompts")]
    done = subprocess.run(
        [CHATEVAL, "ratings", "import-chateval", *votes], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return data / "hub"


def copy_of(imported: Path, data: Path) -> dict[str, str]:
    """The environment of a hub whose data folder is a fresh copy of `imported`, under `data`."""
    shutil.copytree(imported, data / "hub")
    return {**os.environ, "HUB_DATA_DIR": str(data / "hub"), "CHATEVAL_HOME": str(data / "home")}


def log_in(page, url: str, email: str, password: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_load_state()
