"""Bad input to the conversation API: unknown ids, editing a turn that is not the latest system turn, going back to
a message of another conversation, control characters and over-long text, answers out of range, a missing CSRF
token; and an endpoint that stalls mid-reply (the failure in words, retried to a reply). Never a 500."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.llm.server import LocalChatServer
from hub.models import ChatMessage
from hub.services.accounts.accounts import create_token, create_user
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.studies.helpers import KEY_ENV, SECRET, join, responder, study_body


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One hub, endpoint, study and joined participant for the module (each test gets conversations of its own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, SECRET)
        hub = migrated_hub(tmp_path_factory.mktemp("hub"), patch)
        engine = next(hub)
        with Session(engine) as session:
            admin_user = create_user(session, email="admin@example.org", password="x" * 12, display_name="admin")
            admin_user.is_admin = True
            session.add(admin_user)
            session.commit()
            token = create_token(session, admin_user, name="cli")[1]
        with (
            LocalChatServer(responder=responder, expected_key=SECRET) as endpoint,
            TestClient(create_app()) as admin,
            TestClient(create_app()) as browser,
        ):
            body = study_body(endpoint.base_url)
            body["systems"][0].update(key_ref=KEY_ENV, timeout_s=1)
            study = admin.post("/api/studies", json=body, headers=auth(token)).json()
            invite = admin.post(f"/api/studies/{study['id']}/invites", json={}, headers=auth(token)).json()
            join(browser, invite["token"])
            yield browser, study["id"], endpoint, engine
        next(hub, None)


@pytest.fixture
def chat(world):
    """Two exchanges in one new conversation of the participant, one in another."""
    browser, study_id, _endpoint, _engine = world
    ids = [browser.post(f"/api/studies/{study_id}/conversations", json={}).json()["id"] for _ in range(2)]
    turns = [browser.post(f"/api/conversations/{ids[0]}/messages", json={"content": f"m{i}"}).json() for i in (1, 2)]
    other = browser.post(f"/api/conversations/{ids[1]}/messages", json={"content": "elsewhere"}).json()
    return browser, ids[0], turns, other


@pytest.fixture
def endpoint(world):
    return world[2]


@pytest.fixture
def engine(world):
    return world[3]


def _refused(response, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    named = body.get("field") or ".".join(str(p) for p in body["detail"][0]["loc"])
    assert named.endswith(field), body


def test_unknown_ids_are_404_naming_the_field(chat):
    browser, chat_id, _turns, _other = chat
    base = f"/api/conversations/{chat_id}"
    _refused(
        browser.put(f"{base}/messages/999999/annotations", json={"answers": [{"question_id": "safe", "value": True}]}),
        404,
        "message_id",
    )
    _refused(browser.post(f"{base}/messages/999999/edit", json={"content": "x", "reason": "y"}), 404, "message_id")
    _refused(browser.post(f"{base}/messages/999999/retry"), 404, "message_id")
    _refused(browser.post(f"{base}/branches/999999/outcome", json={"successful": True}), 404, "branch_id")
    _refused(browser.get("/api/conversations/999999"), 404, "conversation_id")
    _refused(browser.post(f"{base}/messages/99999999999999999999/edit", json={"content": "x"}), 422, "message_id")


def test_only_the_latest_system_turn_can_be_edited(chat):
    browser, chat_id, turns, other = chat
    base = f"/api/conversations/{chat_id}/messages"
    body = {"content": "A better reply", "reason": "why not"}
    _refused(browser.post(f"{base}/{turns[0]['message']['id']}/edit", json=body), 409, "message_id")  # earlier reply
    _refused(browser.post(f"{base}/{turns[1]['user_message']['id']}/edit", json=body), 409, "message_id")  # user turn
    _refused(browser.post(f"{base}/{other['message']['id']}/edit", json=body), 404, "message_id")  # other chat
    latest = turns[1]["message"]["id"]
    _refused(
        browser.post(f"{base}/{latest}/edit", json={"content": turns[1]["message"]["content"], "reason": "x"}),
        422,
        "content",
    )
    assert browser.post(f"{base}/{latest}/edit", json=body).status_code == 201
    _refused(browser.post(f"{base}/{latest}/edit", json=body), 409, "message_id")  # now on a closed branch


def test_going_back_only_to_an_earlier_system_turn_of_this_conversation(chat):
    browser, chat_id, turns, other = chat
    url = f"/api/conversations/{chat_id}/revert"
    _refused(browser.post(url, json={"message_id": other["message"]["id"]}), 422, "message_id")
    _refused(browser.post(url, json={"message_id": 999999}), 422, "message_id")
    _refused(browser.post(url, json={"message_id": turns[1]["message"]["id"]}), 409, "message_id")  # the leaf
    _refused(browser.post(url, json={"message_id": turns[0]["user_message"]["id"]}), 409, "message_id")
    _refused(browser.post(url, json={"message_id": 0}), 422, "message_id")
    _refused(browser.post(url, json={"message_id": turns[0]["message"]["id"], "reason": "x" * 5_001}), 422, "reason")
    assert browser.post(url, json={"message_id": turns[0]["message"]["id"]}).status_code == 200


def test_control_characters_over_long_and_empty_text_are_refused(chat, engine):
    browser, chat_id, _turns, _other = chat
    url = f"/api/conversations/{chat_id}/messages"
    for content, field in [
        ("nul \x00 here", "content"),
        ("bell \x07", "content"),
        ("x" * 20_001, "content"),
        ("  ", "content"),
    ]:
        _refused(browser.post(url, json={"content": content}), 422, field)
    _refused(browser.post(url, json={"content": "hi", "images": ["not-an-id"]}), 422, "images[0]")
    _refused(browser.post(url, json={"content": "hi", "images": ["a" * 64]}), 404, "images[0]")
    _refused(browser.post(url, json={"content": "hi", "colour": "red"}), 422, "colour")
    assert browser.post(url, content=b"not json", headers={"Content-Type": "application/json"}).status_code == 422
    with Session(engine) as session:
        assert len(session.exec(select(ChatMessage).where(ChatMessage.chat_id == chat_id)).all()) == 4


def test_answers_are_checked_against_the_schema(chat):
    browser, chat_id, turns, _other = chat
    reply, user = turns[1]["message"]["id"], turns[1]["user_message"]["id"]
    url = f"/api/conversations/{chat_id}/messages/{{}}/annotations"
    cases = [
        (reply, [{"question_id": "nope", "value": 1}], "answers[0].question_id"),
        (reply, [{"question_id": "topic", "value": "Facts"}], "answers[0]"),  # asked of user turns only
        (user, [{"question_id": "helpful", "value": 3}], "answers[0]"),  # asked of system turns only
        (reply, [{"question_id": "helpful", "value": 6}], "answers[0].value"),
        (reply, [{"question_id": "helpful", "value": "5"}], "answers[0].value"),
        (reply, [{"question_id": "problems", "value": ["Rude"]}], "answers[0].explanation"),
        (
            reply,
            [{"question_id": "safe", "value": True}, {"question_id": "safe", "value": False}],
            "answers[1].question_id",
        ),
        (reply, [{"question_id": "safe", "value": True, "suggestion_id": 12345}], "answers[0].suggestion_id"),
        (reply, [{"question_id": "safe", "value": True, "handling_ms": -1}], "handling_ms"),
        (reply, [{"question_id": "note", "value": "x" * 5_001}], "answers[0].value"),
        (reply, [], "answers"),
    ]
    for message, answers, field in cases:
        _refused(browser.put(url.format(message), json={"answers": answers}), 422, field)
    assert browser.get(f"/api/conversations/{chat_id}").json()["annotations"] == []


def test_a_participant_call_without_the_csrf_token_is_refused(chat):
    browser, chat_id, _turns, _other = chat
    token = browser.headers.pop("X-CSRF-Token")
    _refused(browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "hi"}), 403, "x-csrf-token")
    browser.headers["X-CSRF-Token"] = token


def test_an_endpoint_that_stalls_mid_reply_fails_in_words_and_the_reply_can_be_retried(chat, endpoint):
    browser, chat_id, _turns, _other = chat
    endpoint.inject("stall_stream", times=1, delay_s=30)
    url = f"/api/conversations/{chat_id}/messages"
    response = browser.post(f"{url}?stream=1", json={"content": "a question that stalls"})
    assert response.status_code == 201
    events = [block for block in response.text.strip().split("\n\n")]
    names = [block.split("\n")[0].removeprefix("event: ") for block in events]
    assert names[0] == "user" and names[-1] == "error" and "delta" in names
    failed = json.loads(events[-1].split("\n")[1].removeprefix("data: "))["message"]
    assert failed["status"] == "error" and "did not finish its reply within 1 seconds" in failed["error"]
    assert failed["content"] == "Turn 3: you said"  # the first half of the words arrived before the stall: kept
    assert "127.0.0.1" not in response.text and "sk-study" not in response.text
    _refused(browser.post(url, json={"content": "next"}), 409, "conversation_id")  # retry or go back first
    retried = browser.post(f"{url}/{failed['id']}/retry")
    assert retried.status_code == 201 and retried.json()["message"]["status"] == "ok"
    assert retried.json()["message"]["content"] == "Turn 3: you said a question that stalls"
    _refused(browser.post(f"{url}/{failed['id']}/retry"), 409, "message_id")


def test_a_reply_past_the_length_cap_fails_in_words(chat, endpoint, monkeypatch):
    from hub.services.studies import turns

    monkeypatch.setattr(turns, "MAX_REPLY_CHARS", 10)  # the cap, small enough for the test endpoint's replies
    browser, chat_id, _turns, _other = chat
    failed = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "a long answer please"})
    assert failed.status_code == 201
    message = failed.json()["message"]
    assert message["status"] == "error" and "could not be read" in message["error"]
    assert len(message["content"]) <= 10
