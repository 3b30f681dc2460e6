"""Conversation-set submissions through the real API and the real job queue (an in-process consumer on the SQLite
queue), on SQLite and PostgreSQL: per-turn values and per-role aggregates checked against values computed here on
their own, the download against `chateval evaluate --conversations --json` run as a real subprocess, and who may
see what."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import AuditEntry, ConversationScore, ConversationSet
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.conversations.helpers import (
    conversation_lines,
    expected_aggregates,
    expected_turn_values,
    jsonl,
    upload,
    wait_evaluated,
)

CHATEVAL = str(Path(sys.executable).with_name("chateval"))
HTML = {"Accept": "text/html"}


@pytest.fixture(params=["sqlite", "postgresql"])
def hub_env(request, tmp_path, monkeypatch):
    """The conftest's hub, on SQLite and on a fresh PostgreSQL database (skipped when PostgreSQL is down)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    yield from migrated_hub(tmp_path, monkeypatch, url)


def test_an_uploaded_set_is_scored_turn_by_turn_and_aggregated_by_role(hub_env, people, tmp_path):
    records = conversation_lines(12)
    content = jsonl(records)
    owner = people["owner"]
    with TestClient(create_app(embedded_worker=True)) as client:
        created = upload(client, owner, content)
        assert created.status_code == 201, created.text
        set_id = created.json()["id"]
        assert created.json()["conversations"] == 12
        body = wait_evaluated(client, owner, set_id)
        assert body["status"] == "evaluated", body
        assert body["progress"] == 1.0

        # Aggregates by role and system label: n and mean (and sd) as computed here from the texts.
        expected = expected_aggregates(records)
        found = {
            (row["system"], group["role"], row["metric"]): row for group in body["aggregates"] for row in group["rows"]
        }
        assert [g["role"] for g in body["aggregates"]] == ["user", "assistant", "conversation"]
        for key, want in expected.items():
            row = found[key]
            assert row["n"] == want["n"], key
            assert row["mean"] == pytest.approx(want["mean"], rel=1e-12, abs=1e-12), key
            if want["sd"] is not None:
                assert row["sd"] == pytest.approx(want["sd"], rel=1e-9), key

        # One conversation's drill-down: every message with its text, the values of user and assistant turns.
        record = records[5]
        detail = client.get(f"/api/conversation-sets/{set_id}/conversation", params={"id": "c5"}, headers=auth(owner))
        assert detail.status_code == 200, detail.text
        detail = detail.json()
        assert detail["system"] == record["system"] and detail["line"] == 6
        assert [t["content"] for t in detail["turns"]] == [m["content"] for m in record["messages"]]
        for turn, message in zip(detail["turns"], record["messages"], strict=True):
            assert turn["scored"] == (message["role"] in ("user", "assistant"))
            if turn["scored"]:
                for name, value in expected_turn_values(message["content"]).items():
                    assert turn["values"][name] == value, (turn["turn"], name)
        assert detail["values"]["turns.all"] == len(record["messages"])

        # The download is what `chateval evaluate --conversations --json` prints for the same file.
        download = client.get(f"/api/conversation-sets/{set_id}/turns.jsonl", headers=auth(owner))
        assert download.status_code == 200
        assert download.headers["content-type"].startswith("application/x-ndjson")
        hub_lines = [json.loads(line) for line in download.text.splitlines()]
    log = tmp_path / "logs.jsonl"
    log.write_bytes(content)
    offline = subprocess.run(
        [CHATEVAL, "evaluate", "--conversations", str(log), "--json", "--no-progress"],
        capture_output=True,
        text=True,
        check=True,
    )
    cli_lines = [json.loads(line) for line in offline.stdout.splitlines()]
    assert hub_lines[0]["kind"] == "run" and cli_lines[0]["kind"] == "run"
    assert hub_lines[0]["metrics"] == cli_lines[0]["metrics"]  # the same metrics, versions and gates
    assert hub_lines[1:-1] == cli_lines[1:-1]  # every turn and conversation record, in the same order
    hub_summary, cli_summary = hub_lines[-1]["groups"], cli_lines[-1]["groups"]
    assert len(hub_summary) == len(cli_summary)
    for mine, theirs in zip(hub_summary, cli_summary, strict=True):
        assert {k: mine[k] for k in ("system", "role", "metric", "n")} == {
            k: theirs[k] for k in ("system", "role", "metric", "n")
        }
        for k in ("mean", "sd", "min", "max"):
            assert mine[k] == pytest.approx(theirs[k], rel=1e-12, abs=1e-12)
    with Session(hub_env) as session:
        turns = session.exec(select(ConversationScore).where(ConversationScore.turn != None)).all()  # noqa: E711
    assert len(turns) == sum(m["role"] in ("user", "assistant") for r in records for m in r["messages"])


@pytest.mark.parametrize("hub_env", ["sqlite"], indirect=True)  # access rules, no database-specific statement
def test_private_sets_are_for_their_owner_and_public_ones_wait_for_an_admin(hub_env, people):
    owner, other, admin = people["owner"], people["other"], people["admin"]
    with TestClient(create_app(embedded_worker=True)) as client:
        private_id = upload(client, owner, jsonl(conversation_lines(3, seed=1)), name="Private logs").json()["id"]
        public_id = upload(client, owner, jsonl(conversation_lines(3, seed=2)), name="Shared logs", is_public="on")
        public_id = public_id.json()["id"]
        for set_id in (private_id, public_id):
            assert wait_evaluated(client, owner, set_id)["status"] == "evaluated"
        paths = [
            "/api/conversation-sets/{id}",
            "/api/conversation-sets/{id}/conversation?id=c0",
            "/api/conversation-sets/{id}/turns.jsonl",
            "/conversation-sets/{id}",
            "/conversation-sets/{id}/conversation?id=c0",
        ]

        def status(token, set_id, path):
            headers = {**(auth(token) if token else {}), **(HTML if not path.startswith("/api") else {})}
            return client.get(path.format(id=set_id), headers=headers).status_code

        for set_id in (private_id, public_id):  # before review: owner and admin only, a plain 404 for others
            for path in paths:
                assert status(owner, set_id, path) == 200, path
                assert status(admin, set_id, path) == 200, path
                assert status(other, set_id, path) == 404, path
                assert status(None, set_id, path) == 404, path
        listed = {s["id"] for s in client.get("/api/conversation-sets").json()["sets"]}
        assert listed == set()

        assert client.post(f"/api/admin/conversation-sets/{public_id}/approve", headers=auth(other)).status_code == 403
        refused = client.post(f"/api/admin/conversation-sets/{public_id}/reject", headers=auth(admin))
        assert refused.status_code == 400 and refused.json()["field"] == "reason"
        approved = client.post(f"/api/admin/conversation-sets/{public_id}/approve", headers=auth(admin))
        assert approved.status_code == 200 and approved.json()["public"] is True
        approved_private = client.post(f"/api/admin/conversation-sets/{private_id}/approve", headers=auth(admin))
        assert approved_private.json()["public"] is False  # approval never publishes what its owner kept private
        for path in paths:
            assert status(None, public_id, path) == 200, path
            assert status(other, public_id, path) == 200, path
            assert status(other, private_id, path) == 404, path
        anonymous = client.get(f"/api/conversation-sets/{public_id}").json()
        assert "review" not in anonymous and "filename" not in anonymous and "error" not in anonymous
        listed = {s["id"] for s in client.get("/api/conversation-sets").json()["sets"]}
        assert listed == {public_id}
        mine = {s["id"] for s in client.get("/api/conversation-sets", headers=auth(owner)).json()["sets"]}
        assert mine == {private_id, public_id}
    with Session(hub_env) as session:
        actions = [e.action for e in session.exec(select(AuditEntry))]
    assert actions.count("approve_conversation_set") == 2


BAD_FILES = [
    (b'{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [\n', 2, "not valid JSON"),
    (
        b'{"messages": [{"role": "user", "content": "hi"}]}\n' * 2
        + b'{"messages": [{"role": "robot", "content": "x"}]}\n',
        3,
        "unknown role",
    ),
    (b'{"messages": [{"role": "user", "content": "bell \\u0007"}]}\n', 1, "control character U+0007"),
    (
        b'{"id": "a", "messages": [{"role": "user", "content": "x"}]}\n'
        b'{"id": "a", "messages": [{"role": "user", "content": "y"}]}\n',
        2,
        "duplicate conversation id",
    ),
    (b'{"messages": []}\n', 1, "non-empty list"),
    (b'{"messages": [{"role": "user", "content": "x"}], "score": 3}\n', 1, "unknown field(s) 'score'"),
    (b'{"messages": [{"role": "user", "content": "x\\u0000"}]}\n', 1, "control character U+0000"),
    (b"\xff\xfe{}\n", 1, "not valid UTF-8"),
    (("[" + "1," * 10 + "1]\n").encode(), 1, "JSON object"),
]


@pytest.mark.parametrize("hub_env", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("content", "line", "words"), BAD_FILES)
def test_a_bad_file_is_refused_naming_the_line_and_nothing_is_stored(hub_env, people, content, line, words, tmp_path):
    with TestClient(create_app()) as client:
        answer = upload(client, people["owner"], content)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["field"] == "conversations"
    assert f"logs.jsonl, line {line}: " in body["error"] and words in body["error"], body
    with Session(hub_env) as session:
        assert session.exec(select(ConversationSet)).all() == []
    objects = [p for p in (tmp_path / "hub-data").rglob("*") if p.is_file() and "objects" in p.parts]
    assert objects == []  # the file itself was not stored either


@pytest.mark.parametrize("hub_env", ["sqlite"], indirect=True)
def test_bad_forms_are_refused_naming_the_field(hub_env, people):
    good = jsonl(conversation_lines(2))
    with TestClient(create_app()) as client:
        assert upload(client, None, good).status_code == 401
        empty = upload(client, people["owner"], b"\n\n")
        assert empty.status_code == 422 and "file is empty" in empty.json()["error"]
        for name, field in (("", "name"), ("x" * 121, "name"), ("bad\u202ename", "name")):
            answer = upload(client, people["owner"], good, name=name)
            assert answer.status_code == 422 and answer.json()["field"] == field, answer.text
        answer = upload(client, people["owner"], good, description="d" * 10_001)
        assert answer.status_code == 422 and answer.json()["field"] == "description"
        missing = client.post("/api/conversation-sets", headers=auth(people["owner"]), data={"name": "n"})
        assert missing.status_code == 400 and missing.json()["field"] == "conversations"
        files = {"responses[x]": ("a.txt", b"x\n", "text/plain")}
        wrong = client.post("/api/conversation-sets", headers=auth(people["owner"]), data={"name": "n"}, files=files)
        assert wrong.status_code == 400 and wrong.json()["field"] == "responses[x]"
        first = upload(client, people["owner"], good)
        assert first.status_code == 201
        again = upload(client, people["owner"], good)
        assert again.status_code == 409 and f"#{first.json()['id']}" in again.json()["error"]
        long_id = client.get(
            f"/api/conversation-sets/{first.json()['id']}/conversation",
            params={"id": "x" * 201},
            headers=auth(people["owner"]),
        )
        assert long_id.status_code == 422
        unknown = client.get(
            f"/api/conversation-sets/{first.json()['id']}/conversation",
            params={"id": "nope"},
            headers=auth(people["owner"]),
        )
        assert unknown.status_code == 404
    with Session(hub_env) as session:
        assert len(session.exec(select(ConversationSet)).all()) == 1
