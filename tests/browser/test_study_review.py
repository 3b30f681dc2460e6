"""Cross-review in headless Chromium: a participant finishes a conversation; another participant of the study opens
"Review another conversation" from the study's home and gets it read-only (no composer, edit or go-back tools, the
branch outcomes not theirs to mark), answers a question about its reply and sees only their own answer.
Screenshots go to HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.browser.test_study_journey import PASSWORD, _create_study, _send, _shot, site  # noqa: F401 (fixture)


def test_a_participant_reviews_another_participants_conversation(browser, site):  # noqa: F811
    url, endpoint = site
    problems: list[str] = []
    admin = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(admin, url, "admin@example.org", PASSWORD)
    token = _create_study(admin, url, endpoint.base_url)

    pages = []
    for _ in range(2):
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{url}/studies/join/{token}")
        page.click("#join-study")
        pages.append(page)
    author, reviewer = pages

    reviewer.click("a.review-next")  # nothing finished yet: said on the home page
    expect(reviewer.locator("text=no other participant's finished conversation")).to_be_visible()
    _shot(reviewer, "review-home")

    author.click("button.start-chat")
    author.wait_for_url(re.compile(r"/studies/\d+/conversations/\d+$"))
    _send(author, "Which bot are you?")
    author.wait_for_selector("li.turn-assistant:not(.streaming) >> text=Reply 1 to: Which bot are you?")
    mine = author.locator("li.turn-assistant")
    mine.locator(".annot-icon[data-question=helpful]").click()
    mine.locator("form.annot-form input[type=radio]").nth(4).check()
    mine.locator("form.annot-form button[type=submit]").click()
    mine.locator(".annot-icon.answered[data-question=helpful]").wait_for()
    author.click("#finish-chat")
    author.click("#finish-yes")
    expect(author.locator("#finish-chat")).to_be_hidden()

    reviewer.click("a.review-next")
    reviewer.wait_for_url(author.url)
    reply = reviewer.locator("li.turn-assistant")
    expect(reply).to_contain_text("Reply 1 to: Which bot are you?")
    assert reviewer.locator("li.turn-user .role").text_content() == "Participant"
    assert reviewer.locator(".tree-speaker").first.text_content() == "Participant"
    expect(reviewer.locator("#composer-note")).to_contain_text("reviewing another participant's conversation")
    expect(reviewer.locator("#message")).to_be_disabled()
    assert reviewer.locator(".edit-reply, .go-back").count() == 0 and reviewer.locator("#finish-chat").is_hidden()
    assert reviewer.locator("table.branches input[type=checkbox]").first.is_disabled()
    reply.locator(".annot-icon[data-question=helpful]").click()
    panel = reply.locator("form.annot-form")
    panel.locator("input[type=radio]").nth(1).check()
    panel.locator("button[type=submit]").click()
    answered = reply.locator(".annot-icon.answered[data-question=helpful]")
    answered.wait_for()
    assert "2 · Weak" in answered.inner_text()
    assert reviewer.locator(".annot-icon.answered").count() == 1  # only their own answer, not the author's 5
    _shot(reviewer, "review")
    assert problems == []
