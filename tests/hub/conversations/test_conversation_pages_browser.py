"""The conversation-set pages in Chromium against a real uvicorn server and the real job queue: a researcher signs
in, uploads a log through the form (a bad file first: the form comes back naming the line), follows the set to
its results (aggregates by role, the conversations) and opens one conversation's turns; no console or CSP errors.
Screenshots go to HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hub.jobs import start_embedded_consumer
from tests.browser.conftest import browser  # noqa: F401 (the module-scoped Chromium fixture)
from tests.hub.conversations.helpers import conversation_lines, expected_turn_values, jsonl
from tests.hub.live_server import live_hub

PASSWORD = "correct horse battery"


@pytest.fixture
def site(hub_env, people):
    consumer = start_embedded_consumer(periodic=False)
    try:
        with live_hub() as (host, port):
            yield f"http://{host}:{port}"
    finally:
        consumer.stop(graceful=True)


def _shot(page, name: str) -> None:
    folder = os.environ.get("HUB_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / f"conversations-{name}.png"), full_page=True)


def test_upload_and_results_pages_in_chromium(browser, site, tmp_path):  # noqa: F811
    records = conversation_lines(6, seed=11)
    good, bad = tmp_path / "logs.jsonl", tmp_path / "bad.jsonl"
    good.write_bytes(jsonl(records))
    bad.write_bytes(jsonl(records[:2]) + b'{"messages": [{"role": "robot", "content": "x"}]}\n')
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(f"{site}/login?next=/conversation-sets/new")
    page.fill('input[name="email"]', "owner@example.org")
    page.fill('input[name="password"]', PASSWORD)
    page.locator('form button[type="submit"]').first.click()
    page.wait_for_url("**/conversation-sets/new")

    page.fill('input[name="name"]', "Support <b>logs</b>")
    page.set_input_files('input[name="conversations"]', str(bad))
    page.locator('form[action="/conversation-sets/new"] button[type="submit"]').click()
    page.wait_for_load_state()
    alert = page.locator('[role="alert"]').inner_text()
    assert "bad.jsonl, line 3: message 1 has unknown role 'robot'" in alert and "conversations" in alert
    assert page.input_value('input[name="name"]') == "Support <b>logs</b>"  # the form comes back as sent
    _shot(page, "refused")
    assert problems == ["Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"]
    problems.clear()  # the refusal's own status; nothing else may fail from here on

    page.set_input_files('input[name="conversations"]', str(good))
    page.locator('form[action="/conversation-sets/new"] button[type="submit"]').click()
    page.wait_for_url("**/conversation-sets/*")
    for _ in range(120):  # the page reloads itself every 3 s while queued or evaluating; 60 s at most
        if page.locator(".cs-status").inner_text() in ("evaluated", "failed"):
            break
        page.wait_for_timeout(500)
        page.reload()
    assert page.locator(".cs-status").inner_text() == "evaluated"
    assert page.locator("h1").inner_text().endswith("Support <b>logs</b>")  # escaped, shown as text
    assert [h.inner_text() for h in page.locator("h3").all()] == ["user", "assistant", "conversation"]
    assert page.locator("table.cs-conversations tbody tr").count() == len(records)
    assert page.locator("a[download]").get_attribute("href").endswith("/turns.jsonl")
    _shot(page, "results")

    page.locator("table.cs-conversations a", has_text="c3").click()
    page.wait_for_url("**/conversation?id=c3")
    rows = page.locator("table.cs-turns tbody tr")
    assert rows.count() == len(records[3]["messages"])
    user_turn = records[3]["messages"][1]
    words = expected_turn_values(user_turn["content"])["length.words"]
    assert f"length.words {words}" in rows.nth(1).inner_text()
    assert "not scored" in rows.nth(0).inner_text()  # the system message
    _shot(page, "conversation")
    assert not problems, problems
    context.close()
