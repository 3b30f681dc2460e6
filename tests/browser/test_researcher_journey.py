"""The whole path a new researcher takes, in headless Chromium: sign up, submit, get approved, watch the
evaluation, find the system on the leaderboard, profile and comparison pages, and download it."""

from __future__ import annotations

import csv
import io
import time
import urllib.request

from evaluation.dataset import load_dataset
from tests.browser.conftest import log_in


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
        if "Scored" in researcher.inner_text("body"):
            break
        time.sleep(1)
    body = researcher.inner_text("body")
    assert "Scored" in body and "bleu-2" in body

    researcher.goto(f"{hub}/leaderboards/{dataset.name}")
    assert "Ada's bot" in researcher.inner_text("body")
    assert "Not ranked" in researcher.inner_text("body")  # automatic scores alone rank nothing, so no chart
    researcher.goto(f"{hub}/leaderboards/{dataset.name}?sort=bleu-2")
    assert researcher.locator("canvas").count() >= 1  # a chosen column is drawn by the vendored library
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
