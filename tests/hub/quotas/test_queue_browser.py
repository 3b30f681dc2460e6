"""In headless Chromium on a real `chateval serve`: a researcher sees the quota on the upload page, submits, finds
the submission's place in /queue, is refused past the quota with the reset time, and a visitor sees the queue with
the private submission only counted. HUB_SCREENSHOTS=DIR keeps the screenshots."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.browser.conftest import CHATEVAL, browser, log_in, serving  # noqa: F401 (fixtures)
from tests.hub.quotas.helpers import next_midnight_words, valid_file

SHOTS = os.environ.get("HUB_SCREENSHOTS")
PASSWORD = "researcher-password-long"


def shot(page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    data = tmp_path_factory.mktemp("hub-queue")
    env = {
        **os.environ,
        "HUB_DATA_DIR": str(data / "hub"),
        "CHATEVAL_HOME": str(data / "home"),
        "HUB_SUBMISSIONS_PER_DAY": "1",
    }
    subprocess.run(
        [CHATEVAL, "admin", "create-user", "ada@example.org", "--name", "Ada", "--password-stdin"],
        input=f"{PASSWORD}\n",
        text=True,
        env=env,
        check=True,
        capture_output=True,
    )
    with serving(env, log=data / "serve.log") as url:
        yield url


def test_quota_and_queue_in_a_browser(browser, hub, tmp_path):  # noqa: F811
    first, second = tmp_path / "mine.txt", tmp_path / "mine2.txt"
    first.write_bytes(valid_file(1))
    second.write_bytes(valid_file(2))
    page = browser.new_page()
    log_in(page, hub, "ada@example.org", PASSWORD)
    page.goto(f"{hub}/submit")
    note = page.locator("#quota").inner_text()
    assert "1 of 1 submissions left today" in note and next_midnight_words() in note, note
    shot(page, "quota_submit_page")
    page.fill("input[name=name]", "Private bot")
    page.set_input_files("input[name='responses[hub-open-v1]']", str(first))
    page.click("main form button[type=submit]")
    page.wait_for_load_state()

    page.goto(f"{hub}/queue")
    mine = page.locator(".queue-mine li").first.inner_text()
    assert "Private bot" in mine and "Waiting for review, position 1 of 1" in mine, mine
    shot(page, "queue_researcher")

    page.goto(f"{hub}/submit")
    assert "0 of 1 submissions left today" in page.locator("#quota").inner_text()
    page.fill("input[name=name]", "Second bot")
    page.set_input_files("input[name='responses[hub-open-v1]']", str(second))
    with page.expect_response(lambda r: r.url.endswith("/submit") and r.request.method == "POST") as answer:
        page.click("main form button[type=submit]")
    assert answer.value.status == 429 and int(answer.value.headers["retry-after"]) > 0
    alert = page.locator("[role=alert]").inner_text()
    assert "1 submission per UTC day" in alert and next_midnight_words() in alert, alert
    shot(page, "quota_refused")

    visitor = browser.new_page()
    visitor.goto(f"{hub}/queue")
    review = visitor.locator("#waiting_review").inner_text()
    assert "1 of them is private or not yet approved" in review, review
    assert "Private bot" not in visitor.content() and "Ada" not in visitor.content()
    shot(visitor, "queue_visitor")
