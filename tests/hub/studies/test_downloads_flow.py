"""End to end through the conversation API (A's services, the real local endpoint server): a participant chats,
annotates, post-edits and goes back; the admin's downloads, reference dataset and dashboard then hold exactly that:
the tree with the edit and the reversal, the answers under the participant's public hash (never the invite token),
the edit as a reference whose context runs through the conversation so far. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json

import pytest
from fastapi.testclient import TestClient

from evaluation.llm.server import LocalChatServer
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.studies.helpers import join, study_body


@pytest.fixture(params=["sqlite", "postgresql"])
def hub_env(request, tmp_path, monkeypatch):
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    yield from migrated_hub(tmp_path, monkeypatch, url)


def _reply(request: dict) -> str:
    return f"You said: {request['messages'][-1]['content']}"


def test_a_real_conversation_downloads_as_a_tree_with_its_edit_and_reversal(hub_env, people, monkeypatch):
    monkeypatch.setenv("HUB_TEST_STUDY_KEY", "sk-flow-0123456789")
    admin = auth(people["admin"])
    with (
        LocalChatServer(responder=_reply, expected_key="sk-flow-0123456789") as endpoint,
        TestClient(create_app()) as client,
        TestClient(create_app()) as browser,
    ):
        body = study_body(endpoint.base_url)
        body["systems"][0]["key_ref"] = "HUB_TEST_STUDY_KEY"
        study = client.post("/api/studies", json=body, headers=admin).json()
        invite = client.post(f"/api/studies/{study['id']}/invites", json={}, headers=admin).json()
        join(browser, invite["token"])
        chat_id = browser.post(f"/api/studies/{study['id']}/conversations", json={}).json()["id"]
        first = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "Hello there"}).json()
        second = browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "Tell me more"}).json()
        answer = {"answers": [{"question_id": "helpful", "value": 2, "handling_ms": 1800}]}
        url = f"/api/conversations/{chat_id}/messages/{second['message']['id']}"
        assert browser.put(f"{url}/annotations", json=answer).status_code == 200
        edit = browser.post(f"{url}/edit", json={"content": "Here is much more.", "reason": "vague"}).json()["message"]
        browser.post(f"/api/conversations/{chat_id}/messages", json={"content": "Thanks"})
        revert = {"message_id": first["message"]["id"], "reason": "lost"}
        assert browser.post(f"/api/conversations/{chat_id}/revert", json=revert).status_code == 200

        lines = client.get(f"/api/studies/{study['id']}/conversations.jsonl", headers=admin).text.splitlines()
        [conversation] = [json.loads(line) for line in lines[1:]]
        annotations = client.get(f"/api/studies/{study['id']}/annotations.csv", headers=admin).text
        references = client.get(f"/api/studies/{study['id']}/references", headers=admin)
        dashboard = client.get(f"/api/studies/{study['id']}/dashboard", headers=admin).json()

    messages = {m["id"]: m for m in conversation["messages"]}
    assert len(messages) == 7  # 3 user turns, 3 replies, 1 edit
    assert all(m["parent_id"] is None or m["parent_id"] in messages for m in messages.values())
    stored_edit = messages[edit["id"]]
    assert stored_edit["edit_of_id"] == second["message"]["id"] and stored_edit["edit_spans"]
    assert stored_edit["parent_id"] == second["message"]["parent_id"] and stored_edit["edit_reason"] == "vague"
    [reversal] = conversation["reverts"]
    assert reversal["to_message_id"] == first["message"]["id"] and reversal["reason"] == "lost"
    assert {b["closed_by"] for b in conversation["branches"]} >= {"edit", "revert"}
    assert conversation["current_leaf_id"] == first["message"]["id"] and conversation["participant"]
    [row] = list(csv.DictReader(io.StringIO(annotations)))
    assert (row["message_id"], row["label"], row["handling_ms"]) == (str(second["message"]["id"]), "Weak", "1800")
    assert row["participant"] == conversation["participant"] and invite["token"] not in annotations
    [prompt] = [json.loads(line) for line in references.text.splitlines()]
    assert [turn["content"] for turn in prompt["context"]] == [
        "Hello there",
        "You said: Hello there",
        "Tell me more",
    ]
    assert prompt["references"] == ["Here is much more."]
    assert dashboard["counts"]["post_edits"] == 1 and dashboard["counts"]["reversals"] == 1
    [edits] = dashboard["edits"]
    assert (edits["replies"], edits["edited"]) == (3, 1)
