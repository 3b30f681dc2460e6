"""The whole path a new researcher takes, in headless Chromium: sign up, submit, get approved, watch the
evaluation, find the system on the leaderboard, profile and comparison pages, and download it."""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evaluation.dataset import load_dataset

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
    port = _free_port()
    server = subprocess.Popen(
        [CHATEVAL, "serve", "--demo", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/openapi.json", timeout=2).close()
            break
        except OSError:
            time.sleep(0.3)
    else:
        server.terminate()
        pytest.fail("hub did not start within 90 s")
    yield url
    server.terminate()
    server.wait(timeout=20)


def log_in(page, url: str, email: str, password: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_load_state()


def test_new_researcher_submits_and_finds_their_system_everywhere(browser, hub, tmp_path):
    dataset = load_dataset("hub-open-v1")
    responses = tmp_path / "my-bot.txt"
    responses.write_text("\n".join(p.references[1] for p in dataset.prompts) + "\n", encoding="utf-8")

    researcher = browser.new_context().new_page()
    researcher.goto(f"{hub}/signup")
    researcher.fill("input[name=email]", "ada@example.org")
    researcher.fill("input[name=display_name]", "Ada")
    researcher.fill("input[name=password]", "a-long-password-1")
    researcher.click("form[action='/signup'] button[type=submit]")
    researcher.wait_for_load_state()

    researcher.goto(f"{hub}/submit")
    researcher.fill("input[name=name]", "Ada's bot")
    researcher.fill("textarea[name=description], input[name=description]", "A retrieval system.")
    researcher.check("input[name=is_public]")
    researcher.set_input_files(f"input[name='responses[{dataset.name}]']", str(responses))
    researcher.click("form[action='/submit'] button[type=submit]")
    researcher.wait_for_url("**/submissions/*")
    status_url = researcher.url
    assert "submitted" in researcher.content()

    admin = browser.new_context().new_page()
    log_in(admin, hub, "admin@example.org", "admin-password-long")
    admin.goto(f"{hub}/admin/queue")
    assert "Ada&#39;s bot" in admin.content() or "Ada's bot" in admin.inner_text("body")
    admin.click("form[action$='/approve'] button[type=submit]")
    admin.wait_for_load_state()

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        researcher.goto(status_url)
        if "evaluated" in researcher.inner_text("body"):
            break
        time.sleep(1)
    body = researcher.inner_text("body")
    assert "evaluated" in body and "bleu-2" in body

    researcher.goto(f"{hub}/leaderboards/{dataset.name}")
    assert "Ada's bot" in researcher.inner_text("body")
    assert researcher.locator("canvas").count() >= 1  # the chart was drawn from the vendored library
    researcher.click("text=Ada's bot")
    researcher.wait_for_load_state()
    assert "A retrieval system." in researcher.inner_text("body")

    system_id = researcher.url.rstrip("/").rsplit("/", 1)[-1]
    researcher.goto(f"{hub}/compare/{dataset.name}?systems={system_id}")
    assert dataset.prompts[0].references[1] in researcher.inner_text("body")

    # The download page links the raw data; the new system's responses are in it, line for line.
    researcher.goto(f"{hub}/downloads")
    assert researcher.locator("a[href='/api/downloads/responses.csv']").count() == 1
    with urllib.request.urlopen(f"{hub}/api/downloads/responses.csv", timeout=10) as download:
        rows = [row for row in csv.DictReader(io.StringIO(download.read().decode())) if row["system_id"] == system_id]
    assert [row["response"] for row in rows] == [p.references[1] for p in dataset.prompts]
