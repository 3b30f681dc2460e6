"""The lifecycle pages in headless Chromium on a real `chateval serve --demo`: submit, my submissions with statuses in
words, notifications with the unread count, the admin's queue, withdrawing, and the forgot-password page."""

from __future__ import annotations

import os

from evaluation.dataset import load_dataset
from tests.browser.conftest import browser, hub, log_in  # noqa: F401 (fixtures)

SHOTS = os.environ.get("HUB_SCREENSHOTS")  # a folder to keep the screenshots in, for looking at them


def shot(page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def test_a_researcher_submits_follows_and_withdraws_in_a_browser(browser, hub, tmp_path):  # noqa: F811
    responses = tmp_path / "mine.txt"
    responses.write_text("\n".join(p.references[0] for p in load_dataset("hub-open-v1").prompts) + "\n")
    page = browser.new_page()
    log_in(page, hub, "admin@example.org", "admin-password-long")
    page.goto(f"{hub}/submit")
    page.fill("input[name=name]", "Browser bot")
    page.set_input_files("input[name='responses[hub-open-v1]']", str(responses))
    page.click("main form button[type=submit]")
    page.wait_for_load_state()

    page.goto(f"{hub}/account/submissions")
    row = page.locator("table.my-submissions tbody tr").first
    assert "Waiting for review" in row.inner_text() and "An admin approves it" in row.inner_text()
    assert page.locator(".nav-notifications .badge").inner_text().strip() != ""  # unread count in the navigation
    shot(page, "my_submissions")

    page.goto(f"{hub}/notifications")
    assert "awaits review" in page.content() and "Waiting for review" in page.content()
    shot(page, "notifications")
    page.goto(f"{hub}/admin/queue")
    assert "Human evaluations waiting for launch" in page.content()
    shot(page, "admin_queue")

    page.goto(f"{hub}/account/submissions")
    page.click("table.my-submissions button.acct-danger")
    page.wait_for_load_state()
    assert "Withdrawn" in page.locator("table.my-submissions tbody tr").first.inner_text()
    shot(page, "my_submissions_withdrawn")

    fresh = browser.new_page()
    fresh.goto(f"{hub}/forgot-password")
    assert "This hub sends no e-mail" in fresh.content()
    shot(fresh, "forgot_password")
