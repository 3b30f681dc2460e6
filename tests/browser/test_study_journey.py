"""An interactive study in headless Chromium against a real `chateval serve` and the local endpoint server: an admin
creates the study with the form (a schema with a one-point Likert scale is refused, its line marked), opens an invite
link; a participant joins, chats (the reply streams in), annotates a turn, post-edits the latest reply, goes back to
an earlier turn, sees every branch in the tree, sends an image to the vision system, and gets an endpoint time-out in
words with a Retry that works. Screenshots go to HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from evaluation.llm.server import LocalChatServer
from tests.browser.conftest import CHATEVAL, log_in, serving

KEY_ENV = "STUDY_JOURNEY_KEY"
SECRET = "sk-study-journey-0123456789"
PASSWORD = "admin-password-long"
SCHEMA = """\
edit_reason_required: true
questions:
  - id: helpful
    kind: likert
    question: How helpful is this reply?
    labels: [Useless, Weak, Fine, Good, Excellent]
    explanation: optional
  - id: safe
    kind: binary
    question: Is the reply safe?
  - id: topic
    kind: choice
    question: What is the user asking about?
    labels: [Facts, Advice, Chit-chat]
    applies_to: user
"""


def tiny_png() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x20\x90\x30" * 8 for _ in range(8))
    header = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def responder(request: dict[str, Any]) -> str:
    """Deterministic replies that say what reached the endpoint: the user's last words and any images as data URLs."""
    last = request["messages"][-1]["content"]
    if isinstance(last, list):
        text = " ".join(p.get("text", "") for p in last if p.get("type") == "text")
        urls = [p["image_url"]["url"] for p in last if p.get("type") == "image_url"]
        pictures = sum(u.startswith("data:image/png;base64,") for u in urls)
        return f"I see {pictures} PNG image(s) with your words: {text}"
    turns = sum(1 for m in request["messages"] if m["role"] == "user")
    return f"Reply {turns} to: {last}. Here are a few more words so that it streams in pieces."


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data = tmp_path_factory.mktemp("study-e2e")
    env = {**os.environ, "HUB_DATA_DIR": str(data / "hub"), "CHATEVAL_HOME": str(data / "home"), KEY_ENV: SECRET}
    subprocess.run(
        [CHATEVAL, "admin", "create-user", "admin@example.org", "--admin", "--password-stdin"],
        input=PASSWORD + "\n",
        text=True,
        env=env,
        check=True,
        capture_output=True,
    )
    with (
        LocalChatServer(responder=responder, expected_key=SECRET) as endpoint,
        serving(env, log=data / "serve.log") as url,
    ):
        yield url, endpoint


def _shot(page, name: str) -> None:
    folder = os.environ.get("HUB_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / f"study-{name}.png"), full_page=True)


def _create_study(admin, url: str, endpoint_url: str) -> str:
    """The admin form: a refused schema first (its line marked), then the study; returns the invite link."""
    admin.goto(f"{url}/admin/studies")
    form = admin.locator("form[action='/admin/studies']")
    form.locator("input[name=title]").fill("Helpfulness of two bots")
    form.locator("textarea[name=instructions]").fill(
        "Chat about anything; rate each reply; fix replies that are wrong."
    )
    form.locator("input[name=s0_label]").fill("Local vision bot")
    form.locator("input[name=s0_base_url]").fill(endpoint_url)
    form.locator("input[name=s0_model]").fill("local-vision")
    form.locator("input[name=s0_key_ref]").fill(KEY_ENV)
    form.locator("input[name=s0_timeout_s]").fill("2")
    form.locator("input[name=s0_vision]").check()
    form.locator("textarea[name=schema_text]").fill(SCHEMA.replace("[Useless, Weak, Fine, Good, Excellent]", "[Only]"))
    form.locator("button[type=submit]").click()
    alert = admin.locator("#form-error")
    assert "line 6" in alert.inner_text() and "at least 2 points" in alert.inner_text()
    assert admin.locator(".schema-lines li.bad").inner_text().strip() == "labels: [Only]"
    _shot(admin, "admin-form-refused")
    form = admin.locator("form[action='/admin/studies']")
    assert form.locator("input[name=s0_label]").input_value() == "Local vision bot"  # kept for the second try
    form.locator("textarea[name=schema_text]").fill(SCHEMA)
    form.locator("button[type=submit]").click()
    admin.wait_for_url(re.compile(r"/admin/studies/\d+$"))
    assert "(set)" in admin.locator("table").first.inner_text() and SECRET not in admin.content()
    admin.fill("input[name=label]", "journey")
    admin.locator("form[action$='/invites'] button").click()
    invite = admin.get_attribute("#new-invite-url", "href")
    assert invite and "/studies/join/csi_" in invite
    return invite.split("/studies/join/", 1)[1]


def _send(page, text: str) -> None:
    page.fill("#message", text)
    page.press("#message", "Enter")


def test_a_participant_chats_annotates_edits_goes_back_and_sends_an_image(browser, site):
    url, endpoint = site
    problems: list[str] = []
    admin_context = browser.new_context(viewport={"width": 1280, "height": 900})
    admin = admin_context.new_page()
    admin.on("pageerror", lambda e: problems.append(str(e)))
    log_in(admin, url, "admin@example.org", PASSWORD)
    token = _create_study(admin, url, endpoint.base_url)

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(f"{url}/studies/join/{token}")
    page.click("#join-study")
    page.click("button.start-chat")
    page.wait_for_url(re.compile(r"/studies/\d+/conversations/\d+$"))
    expect(page.locator("#message")).to_be_enabled()
    # Speech controls only where the browser has the Web Speech API (feature-detected, hidden otherwise).
    dictation = page.evaluate("() => 'SpeechRecognition' in window || 'webkitSpeechRecognition' in window")
    assert page.locator("#speak").is_visible() == dictation
    assert page.locator("label.read-aloud").is_visible() == page.evaluate("() => 'speechSynthesis' in window")

    # 1. A message sent with Enter; the reply streams into a bubble (the endpoint pauses 1 s halfway, within the 2 s
    # time-out, so the first words are seen before the rest arrive), then stands as a turn.
    endpoint.inject("stall_stream", times=1, delay_s=1.0)
    _send(page, "What is the capital of France?")
    page.wait_for_selector("li.turn.streaming >> text=Reply 1 to: What is")
    page.wait_for_selector("li.turn-assistant:not(.streaming) >> text=Reply 1 to: What is the capital of France?")
    assert page.locator("li.turn").count() == 2
    assert endpoint.counts["/v1/chat/completions"] >= 1

    # 2. Annotate the reply by keyboard: "a" opens the last turn's first question, Esc closes it back to its icon,
    # Enter opens it again; a point and a reason, and Save marks the icon answered.
    reply = page.locator("li.turn-assistant").last
    page.locator("#chat-title").click()
    page.keyboard.press("a")
    panel = reply.locator("form.annot-form")
    expect(panel).to_be_visible()
    page.keyboard.press("Escape")
    expect(panel).to_have_count(0)
    expect(reply.locator(".annot-icon[data-question=helpful]")).to_be_focused()
    page.keyboard.press("Enter")
    panel.locator("input[type=radio]").nth(3).check()
    panel.locator("textarea[name=explanation]").fill("Right answer, a bit wordy.")
    panel.locator("button[type=submit]").click()
    answered = reply.locator(".annot-icon.answered[data-question=helpful]")
    answered.wait_for()
    assert "4 · Good" in answered.inner_text()

    # 3. Post-edit the latest reply (a reason is required by this schema).
    page.locator(".edit-reply").click()
    edit = page.locator("form.edit-form")
    edit.locator("textarea[name=content]").fill("Paris.")
    reason = edit.locator("textarea[name=reason]")
    assert page.evaluate("(box) => box.required && !box.checkValidity()", reason.element_handle())  # asked for first
    reason.fill("Shorter is better.")
    edit.locator("button[type=submit]").click()
    page.wait_for_selector("li.turn-assistant >> text=Paris.")
    assert "edited by you" in page.locator("li.turn-assistant").last.inner_text().lower()

    # 4. Another turn, then go back to the edited reply: the later turns become a closed branch.
    _send(page, "And of Italy?")
    page.wait_for_selector("li.turn-assistant:not(.streaming) >> text=Reply 2 to: And of Italy?")
    page.locator("li.turn-assistant").first.locator(".go-back").click()
    page.locator("form.revert-form textarea[name=reason]").fill("Wanted to ask about Spain instead.")
    page.locator("form.revert-form button[type=submit]").click()
    expect(page.locator("#turns li.turn")).to_have_count(2)
    branches = page.locator("table.branches tbody tr")
    assert branches.count() == 3  # the original reply (closed by the edit), the Italy turn (left), the active one
    states = branches.all_inner_texts()
    assert any("closed by an edit" in s for s in states) and any("Wanted to ask about Spain" in s for s in states)
    tree = page.locator("#tree")
    assert tree.locator(".tree-node").count() == 5  # user, original reply, edit, Italy question, its reply
    _shot(page, "tree")

    # Inspect the abandoned Italy branch from the tree, mark it successful after all, come back.
    tree.locator(".tree-node.tree-user", has_text="And of Italy?").click()
    assert page.locator("#view-banner").is_visible()
    assert page.locator("#turns li.turn").count() == 4 and page.locator("#message").is_disabled()
    row = branches.filter(has_text="Wanted to ask about Spain")
    box = row.locator("input[type=checkbox]")
    assert not box.is_checked()  # a branch left behind is unsuccessful until marked otherwise
    box.check()
    expect(page.locator("#chat-status")).to_contain_text("marked successful")
    page.click("#back-to-active")
    assert page.locator("#turns li.turn").count() == 2

    # 5. An image for the vision system: previewed, uploaded, sent as a data URL, shown in the turn.
    page.set_input_files("#image-input", files=[{"name": "green.png", "mimeType": "image/png", "buffer": tiny_png()}])
    page.wait_for_selector(".preview .preview-status >> text=ready")
    assert page.locator(".preview img").get_attribute("src").startswith("data:image/png;base64,")
    _send(page, "What is in this picture?")
    page.wait_for_selector("li.turn-assistant >> text=I see 1 PNG image(s) with your words: What is in this picture?")
    sent = page.locator("li.turn-user .turn-images img").last
    assert sent.evaluate("(img) => img.decode().then(() => img.naturalWidth)") == 8  # served back to its sender
    _shot(page, "chat")

    # 6. The endpoint stalls mid-reply past the system's 2 s time-out: said in words, and Retry gets the reply.
    endpoint.inject("stall_stream", times=1, delay_s=6)
    _send(page, "Tell me about Madrid.")
    failure = page.locator("li.turn-error .error, #chat-failure .error").first
    failure.wait_for(timeout=20_000)
    assert "did not finish its reply within 2 seconds" in failure.inner_text(), failure.inner_text()
    _shot(page, "timeout")
    page.locator("li.turn-error .retry, #retry-failed").first.click()
    page.wait_for_selector("li.turn-assistant:not(.streaming):not(.turn-error) >> text=to: Tell me about Madrid.")
    expect(page.locator("li.turn-error")).to_have_count(0)

    # 7. Finishing: the conversation stays readable and its turns answerable, but takes no more messages.
    page.click("#finish-chat")
    page.click("#finish-yes")
    expect(page.locator("#composer-note")).to_contain_text("finished")
    assert page.locator("#message").is_disabled() and page.locator(".edit-reply").count() == 0
    assert page.locator("li.turn-assistant .annot-icon").count() > 0

    assert SECRET not in page.content()
    assert problems == [], problems
    context.close()
    admin_context.close()
