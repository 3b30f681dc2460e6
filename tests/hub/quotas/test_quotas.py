"""Daily quotas: valid submissions (HUB_SUBMISSIONS_PER_DAY) and upload attempts (HUB_SUBMISSION_ATTEMPTS_PER_DAY)
per researcher and UTC day; over either, 429 with Retry-After to 00:00 UTC and a message naming the quota and the
reset time; refused files use no submission; admins are exempt; the upload page and GET /api/account/quota say
what is left. Conversation-set uploads count toward both exactly like response files."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import db, queue, settings, storage
from hub.models import ConversationSet, Submission, SubmissionStatus
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.quotas.helpers import invalid_file, next_midnight_words, seconds_to_utc_midnight, upload, valid_file
from tests.hub.test_pages_account import browser, log_in, submit


@pytest.fixture
def quota_env(hub_env, people, monkeypatch):
    monkeypatch.setenv("HUB_SUBMISSIONS_PER_DAY", "2")
    monkeypatch.setenv("HUB_SUBMISSION_ATTEMPTS_PER_DAY", "6")
    settings.get_settings.cache_clear()
    for cached in (db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()
    return people


def _quota(client, token) -> dict:
    reply = client.get("/api/account/quota", headers=auth(token))
    assert reply.status_code == 200, reply.text
    return reply.json()


def _assert_refused(reply, words: str) -> None:
    assert reply.status_code == 429, reply.text
    retry_after = int(reply.headers["Retry-After"])
    expected = seconds_to_utc_midnight()
    assert expected - 5 <= retry_after <= expected + 1, (retry_after, expected)
    message = reply.json()["error"]
    assert words in message and next_midnight_words() in message, message


def test_the_quota_counts_valid_submissions_and_refuses_the_next_until_midnight_utc(quota_env):
    token = quota_env["owner"]
    with TestClient(create_app()) as client:
        start = _quota(client, token)
        assert (start["submissions_left"], start["submissions_per_day"], start["exempt"]) == (2, 2, False)
        assert start["resets_at"].endswith("T00:00:00Z")
        assert [upload(client, token, valid_file(n)).status_code for n in range(2)] == [201, 201]
        assert _quota(client, token)["submissions_left"] == 0
        _assert_refused(upload(client, token, valid_file(2)), "2 submissions per UTC day")
        other = upload(client, quota_env["other"], valid_file(3))  # someone else's quota is their own
        assert other.status_code == 201, other.text
    with Session(db.get_engine()) as session:
        assert len(session.exec(select(Submission)).all()) == 3


def test_refused_files_use_no_submission_but_every_upload_is_an_attempt(quota_env):
    token = quota_env["owner"]
    with TestClient(create_app()) as client:
        for _ in range(3):
            assert upload(client, token, invalid_file()).status_code == 422
        now = _quota(client, token)
        assert (now["submissions_used"], now["attempts_used"], now["attempts_left"]) == (0, 3, 3)
        assert [upload(client, token, valid_file(n)).status_code for n in range(2)] == [201, 201]
        assert upload(client, token, valid_file(9)).status_code == 429  # the 6th attempt: over the quota, counted
        _assert_refused(upload(client, token, invalid_file()), "6 uploads (valid or not) per UTC day")
        assert _quota(client, token)["attempts_left"] == 0


def test_a_submission_whose_evaluation_failed_gives_its_place_back(quota_env):
    token = quota_env["owner"]
    with TestClient(create_app()) as client:
        first, second = (upload(client, token, valid_file(n)).json()[0]["id"] for n in range(2))
        assert upload(client, token, valid_file(2)).status_code == 429
        with Session(db.get_engine()) as session:
            session.get(Submission, first).status = SubmissionStatus.failed
            session.commit()
        assert _quota(client, token)["submissions_left"] == 1
        assert upload(client, token, valid_file(3)).status_code == 201
        with Session(db.get_engine()) as session:  # a withdrawn one keeps counting: withdrawing is no way around
            session.get(Submission, second).status = SubmissionStatus.withdrawn
            session.commit()
        assert upload(client, token, valid_file(4)).status_code == 429


def test_admins_are_exempt(quota_env):
    token = quota_env["admin"]
    with TestClient(create_app()) as client:
        assert [upload(client, token, valid_file(n)).status_code for n in range(4)] == [201] * 4
        for _ in range(7):
            assert upload(client, token, invalid_file()).status_code == 422
        mine = _quota(client, token)
        assert mine["exempt"] is True and mine["submissions_left"] is None


def test_the_upload_page_shows_what_is_left_and_the_form_is_refused_with_retry_after(quota_env):
    with browser(create_app()) as client:
        log_in(client, "owner")
        page = client.get("/submit")
        assert "2 of 2</strong> submissions left today" in page.text
        assert next_midnight_words().replace(" UTC", "") in page.text
        for n in range(2):
            assert upload(client, quota_env["owner"], valid_file(n)).status_code == 201
        assert "0 of 2</strong> submissions left today" in client.get("/submit").text
        refused = submit(client, name="Form bot", content=valid_file(7))
        assert refused.status_code == 429, refused.text[:500]
        assert abs(int(refused.headers["Retry-After"]) - seconds_to_utc_midnight()) <= 5
        assert "Nothing was submitted" in refused.text and "2 submissions per UTC day" in refused.text
        assert next_midnight_words() in refused.text


def _conversation_set(client, token, n: int | None):
    """A valid conversation set that differs for every n, or (n None) one refused by validation (422)."""
    line = {"messages": [{"role": "user", "content": f"hello {n}"}, {"role": "assistant", "content": "hi there"}]}
    content = (json.dumps(line) + "\n").encode() if n is not None else b'{"messages": "not a list"}\n'
    files = {"conversations": ("chats.jsonl", content, "application/x-ndjson")}
    return client.post("/api/conversation-sets", headers=auth(token), data={"name": "My chats"}, files=files)


def test_conversation_sets_share_the_quota_and_the_attempt_cap_with_response_files(quota_env):
    token = quota_env["owner"]
    with TestClient(create_app()) as client:
        assert _conversation_set(client, token, None).status_code == 422  # refused: an attempt, no submission
        assert upload(client, token, valid_file(0)).status_code == 201
        first = _conversation_set(client, token, 1)
        assert first.status_code == 201, first.text
        now = _quota(client, token)
        assert (now["submissions_used"], now["attempts_used"]) == (2, 3)
        _assert_refused(_conversation_set(client, token, 2), "2 submissions per UTC day")
        _assert_refused(upload(client, token, valid_file(3)), "2 submissions per UTC day")
        with Session(db.get_engine()) as session:  # an evaluation that failed gives its place back, as for files
            session.get(ConversationSet, first.json()["id"]).status = "failed"
            session.commit()
        assert _conversation_set(client, token, 4).status_code == 201  # the 6th attempt
        _assert_refused(_conversation_set(client, token, 5), "6 uploads (valid or not) per UTC day")
    with Session(db.get_engine()) as session:
        assert len(session.exec(select(ConversationSet)).all()) == 2


def test_the_conversation_set_form_shows_the_quota_and_is_refused_with_retry_after(quota_env):
    with browser(create_app()) as client:
        log_in(client, "owner")
        assert "2 of 2</strong> submissions left today" in client.get("/conversation-sets/new").text
        for n in range(2):
            assert upload(client, quota_env["owner"], valid_file(n)).status_code == 201
        form = client.get("/conversation-sets/new").text
        assert "0 of 2</strong> submissions left today" in form
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
        line = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
        refused = client.post(
            "/conversation-sets/new",
            data={"name": "Form chats", "csrf_token": csrf},
            files={"conversations": ("chats.jsonl", line.encode(), "application/x-ndjson")},
        )
        assert refused.status_code == 429, refused.text[:500]
        assert abs(int(refused.headers["Retry-After"]) - seconds_to_utc_midnight()) <= 5
        assert "Nothing was stored" in refused.text and next_midnight_words() in refused.text
