"""A participant's conversation over the API against the real local endpoint server, on SQLite and PostgreSQL:
send messages (JSON and streamed), annotate turns, post-edit the latest reply (the history sent from then on uses
the edit), go back to an earlier turn, mark branches; and every bad input answered 4xx naming its field."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.llm.server import LocalChatServer
from hub.models import ChatBranch, ChatMessage
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.studies.helpers import KEY_ENV, SECRET, join, responder, study_body


@pytest.fixture(params=["sqlite", "postgresql"])
def hub_env(request, tmp_path, monkeypatch):
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    yield from migrated_hub(tmp_path, monkeypatch, url)


@pytest.fixture
def endpoint(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    sent: list[dict] = []

    def recording(request: dict) -> str:
        sent.append(request)
        return responder(request)

    with LocalChatServer(responder=recording, expected_key=SECRET) as server:
        server.sent = sent
        yield server


def _study(client, people, endpoint, **system):
    body = study_body(endpoint.base_url)
    body["systems"][0].update(key_ref=KEY_ENV, **system)
    study = client.post("/api/studies", json=body, headers=auth(people["admin"])).json()
    invite = client.post(f"/api/studies/{study['id']}/invites", json={}, headers=auth(people["admin"])).json()
    return study, invite


def _events(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_a_participant_chats_annotates_edits_and_goes_back(hub_env, people, endpoint):
    with TestClient(create_app()) as admin_client, TestClient(create_app()) as browser:
        study, invite = _study(admin_client, people, endpoint)
        join(browser, invite["token"])
        chat = browser.post(f"/api/studies/{study['id']}/conversations", json={})
        assert chat.status_code == 201 and chat.json()["system"]["label"] == "Local bot"
        chat_id = chat.json()["id"]

        first = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "Hello there"})
        assert first.status_code == 201, first.text
        reply = first.json()["message"]
        assert reply["status"] == "ok" and reply["content"] == "Turn 1: you said Hello there"
        assert reply["parent_id"] == first.json()["user_message"]["id"] and reply["depth"] == 1
        assert endpoint.sent[-1]["messages"][0] == {"role": "system", "content": "You are a test bot."}
        assert "sk-study" not in first.text

        streamed = browser.post(
            f"/api/conversations/{chat_id}/messages",
            json={"content": "Tell me more"},
            headers={"Accept": "text/event-stream"},
        )
        assert streamed.status_code == 201 and streamed.headers["content-type"].startswith("text/event-stream")
        events = _events(streamed.text)
        assert events[0][0] == "user" and events[-1][0] == "done"
        deltas = "".join(data["text"] for name, data in events if name == "delta")
        assert deltas == events[-1][1]["message"]["content"] == "Turn 2: you said Tell me more"
        second_reply = events[-1][1]["message"]

        user_turn = first.json()["user_message"]["id"]
        answers = {
            "answers": [
                {"question_id": "helpful", "value": 4, "explanation": "clear", "handling_ms": 2300},
                {"question_id": "safe", "value": True},
                {"question_id": "problems", "value": ["Off-topic"], "explanation": "drifts"},
            ]
        }
        stored = browser.put(f"/api/conversations/{chat_id}/messages/{reply['id']}/annotations", json=answers)
        assert stored.status_code == 200, stored.text
        assert {a["question_id"]: a["value"] for a in stored.json()["annotations"]} == {
            "helpful": 4,
            "safe": True,
            "problems": ["Off-topic"],
        }
        topic = {"answers": [{"question_id": "topic", "value": "Facts"}]}
        assert (
            browser.put(f"/api/conversations/{chat_id}/messages/{user_turn}/annotations", json=topic).status_code == 200
        )

        no_reason = browser.post(
            f"/api/conversations/{chat_id}/messages/{second_reply['id']}/edit", json={"content": "Turn 2: more, edited"}
        )
        assert no_reason.status_code == 422 and no_reason.json()["field"] == "reason"
        edited = browser.post(
            f"/api/conversations/{chat_id}/messages/{second_reply['id']}/edit",
            json={"content": "Turn 2: here is more detail", "reason": "too vague"},
        )
        assert edited.status_code == 201, edited.text
        edit = edited.json()["message"]
        assert edit["edit_of_id"] == second_reply["id"] and edit["parent_id"] == second_reply["parent_id"]
        assert edit["edit_spans"] == [  # "more" is kept: the words before it replaced, "detail" added after it
            {"op": "replace", "original": "you said Tell me", "edited": "here is", "start": 8, "end": 24},
            {"op": "insert", "original": "", "edited": "detail", "start": 29, "end": 29},
        ]

        third = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "Thanks"}).json()
        sent = endpoint.sent[-1]["messages"]
        assert {"role": "assistant", "content": "Turn 2: here is more detail"} in sent  # the edit is the history
        assert all(m["content"] != second_reply["content"] for m in sent)

        back = browser.post(f"/api/conversations/{chat_id}/revert", json={"message_id": reply["id"], "reason": "lost"})
        assert back.status_code == 200 and back.json()["current_leaf_id"] == reply["id"]
        fourth = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "Different question"}).json()
        assert fourth["user_message"]["parent_id"] == reply["id"]
        assert endpoint.sent[-1]["messages"][-2] == {"role": "assistant", "content": reply["content"]}

        tree = browser.get(f"/api/conversations/{chat_id}").json()
        assert tree["current_leaf_id"] == fourth["message"]["id"]
        assert len(tree["messages"]) == 9  # 4 user turns, 4 replies, 1 edit
        assert tree["active_path"] == [user_turn, reply["id"], fourth["user_message"]["id"], fourth["message"]["id"]]
        closed = [b for b in tree["branches"] if b["closed_by"]]
        assert [(b["closed_by"], b["leaf_id"], b["reason"], b["successful"]) for b in closed] == [
            ("edit", second_reply["id"], "too vague", False),
            ("revert", third["message"]["id"], "lost", False),
        ]
        open_branch = next(b for b in tree["branches"] if b["closed_by"] is None)
        assert open_branch["successful"] is True and open_branch["leaf_id"] == fourth["message"]["id"]
        assert tree["reverts"][0]["to_message_id"] == reply["id"] and tree["reverts"][0]["depth"] == 1
        assert len(tree["annotations"]) == 4
        marked = browser.post(
            f"/api/conversations/{chat_id}/branches/{closed[1]['id']}/outcome", json={"successful": True}
        )
        assert marked.status_code == 200 and marked.json()["successful"] is True

        with TestClient(create_app()) as stranger:
            join(stranger, invite["token"])
            assert stranger.get(f"/api/conversations/{chat_id}").status_code == 404
            assert stranger.post(f"/api/conversations/{chat_id}/messages", json={"content": "hi"}).status_code == 404
        assert admin_client.get(f"/api/conversations/{chat_id}", headers=auth(people["admin"])).status_code == 200
        assert admin_client.get(f"/api/conversations/{chat_id}", headers=auth(people["owner"])).status_code == 404
        assert browser.get(f"/api/studies/{study['id']}/conversations").json()[0]["id"] == chat_id
        assert browser.post(f"/api/conversations/{chat_id}/finish").json()["status"] == "finished"
        finished = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "more?"})
        assert finished.status_code == 409 and finished.json()["field"] == "conversation_id"

        admin = auth(people["admin"])  # an admin tries the study out in a conversation of their own
        own = admin_client.post(f"/api/studies/{study['id']}/conversations", json={}, headers=admin).json()
        assert own["participant_id"] is None
        said = admin_client.post(f"/api/conversations/{own['id']}/messages", json={"content": "Test"}, headers=admin)
        assert said.json()["message"]["content"] == "Turn 1: you said Test"
        closed = admin_client.post(f"/api/studies/{study['id']}/status", json={"status": "closed"}, headers=admin)
        assert closed.status_code == 200
        refused = browser.post(f"/api/studies/{study['id']}/conversations", json={})
        assert refused.status_code == 409 and browser.get(f"/api/conversations/{chat_id}").status_code == 200
    with Session(hub_env) as session:
        assert len(session.exec(select(ChatBranch).where(ChatBranch.chat_id == chat_id)).all()) == 3
        assert session.exec(select(ChatMessage).where(ChatMessage.status != "ok")).first() is None
