"""A study's downloads: conversations as JSONL trees (parents form a tree; post-edits, reversals and branch outcomes
present), annotations as CSV with ids and public hashes only (never a participant's private id, and formula-like
cells quoted), admins only until the study is closed and published; published studies go into the snapshot."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from hub.models import Study
from hub.services.studies import data_rows
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.snapshots import helpers as snapshot_helpers
from tests.hub.studies.study_rows import FORMULA, PRIVATE_EXTERNAL_IDS, seed_study


@pytest.fixture
def client():
    with TestClient(create_app()) as client:
        yield client


def _jsonl(response) -> tuple[dict, list[dict]]:
    assert response.status_code == 200, response.text
    header, *rows = (json.loads(line) for line in response.text.splitlines())
    return header, rows


def _assert_tree(messages: list[dict]) -> None:
    """Every parent is a message of the same conversation, one root, and following parents always ends."""
    ids = {m["id"] for m in messages}
    assert len(ids) == len(messages)
    parent = {m["id"]: m["parent_id"] for m in messages}
    assert all(p is None or p in ids for p in parent.values())
    assert sum(p is None for p in parent.values()) == 1
    for start in ids:
        seen, current = set(), start
        while current is not None:
            assert current not in seen
            seen.add(current)
            current = parent[current]


def test_conversations_download_round_trips_the_tree(hub_env, admin_user, people, client):
    seeded = seed_study(hub_env, admin_user)
    header, rows = _jsonl(
        client.get(f"/api/studies/{seeded.study_id}/conversations.jsonl", headers=auth(people["admin"]))
    )
    assert header == {"schema_version": 1, "kind": "study_conversations", "fields": list(data_rows.CONVERSATION_FIELDS)}
    assert [r["conversation_id"] for r in rows] == list(seeded.chats)  # an admin gets the test chat as well
    first = rows[0]
    m = seeded.m
    _assert_tree(first["messages"])
    by_id = {message["id"]: message for message in first["messages"]}
    assert [by_id[m[n]]["content"] for n in ("u1", "a2", "a3", "a4", "u5", "a6", "u7", "a8")] == [
        "What is the capital of France?",
        "Paris is the capital.",
        "The capital of France is Paris.",
        "The capital of France is Paris, on the Seine.",
        "And of Italy?",
        "Rome is.",
        "Thanks!",
        "You are welcome.",
    ]
    # Post-edits sit beside what they replace (same parent), each naming it; later turns follow the accepted edit.
    assert (by_id[m["a3"]]["edit_of_id"], by_id[m["a4"]]["edit_of_id"]) == (m["a2"], m["a3"])
    assert {by_id[m[n]]["parent_id"] for n in ("a2", "a3", "a4")} == {m["u1"]}
    assert by_id[m["u7"]]["parent_id"] == m["a4"] and by_id[m["u7"]]["images"] == [
        {"sha256": "ab" * 32, "mime": "image/png", "size": 68}
    ]
    assert [(r["from_leaf_id"], r["to_message_id"], r["reason"]) for r in first["reverts"]] == [
        (m["a6"], m["a4"], "off track")
    ]
    outcomes = {(b["leaf_id"], b["closed_by"], b["successful"]) for b in first["branches"]}
    assert outcomes == {
        (m["a2"], "edit", False),
        (m["a3"], "edit", False),
        (m["a6"], "revert", False),
        (m["a8"], None, True),
    }
    assert (first["participant"], first["system_id"], first["system"], first["arm"], first["current_leaf_id"]) == (
        seeded.hashes[0],
        seeded.system_a,
        "Bot A",
        "assisted",  # the participant's arm
        m["a8"],
    )
    admin_chat = rows[2]
    assert admin_chat["participant"] is None and admin_chat["messages"][1]["error"] == "endpoint said PRIVATEQX9"
    for private in PRIVATE_EXTERNAL_IDS:
        assert private not in json.dumps(rows)


def _csv(response) -> tuple[list[str], list[dict[str, str]]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    reader = csv.DictReader(io.StringIO(response.text))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def test_annotations_csv_holds_ids_and_public_hashes_never_private_ids(hub_env, admin_user, people, client):
    seeded = seed_study(hub_env, admin_user)
    response = client.get(f"/api/studies/{seeded.study_id}/annotations.csv", headers=auth(people["admin"]))
    fields, rows = _csv(response)
    assert tuple(fields) == data_rows.ANNOTATION_FIELDS
    assert len(rows) == 16  # 2 x 2 answers on three turns, problems, note, topic, and the admin's own
    for private in PRIVATE_EXTERNAL_IDS:
        assert private not in response.text
    assert {r["participant"] for r in rows} == {*seeded.hashes, ""}
    helpful = [r for r in rows if r["question_id"] == "helpful" and r["message_id"] == str(seeded.m["a4"])]
    assert [(r["value"], r["label"], r["participant"]) for r in helpful] == [
        ("5", "Excellent", seeded.hashes[0]),
        ("4", "Good", seeded.hashes[1]),
    ]
    safe = {(r["message_id"], r["participant"]): (r["value"], r["label"]) for r in rows if r["question_id"] == "safe"}
    assert safe[(str(seeded.m["a8"]), seeded.hashes[1])] == ("false", "No")  # binary: false = the first label
    [shown] = [r for r in rows if r["suggestion_id"]]
    assert (shown["message_id"], shown["suggestion_value"], shown["suggestion_confidence"]) == (
        str(seeded.m["a8"]),
        "4",
        "0.8",
    )
    [problems] = [r for r in rows if r["question_id"] == "problems"]
    assert (problems["value"], problems["label"], problems["kind"]) == (
        '["Wrong","Off-topic"]',
        "Wrong; Off-topic",
        "multi",
    )
    assert problems["explanation"] == "'" + FORMULA  # a formula-like text cell is quoted, never run
    [note] = [r for r in rows if r["question_id"] == "note"]
    assert json.loads(note["value"]) == FORMULA and note["label"] == "" and note["handling_ms"] == "9000"
    _, raw = _jsonl(client.get(f"/api/studies/{seeded.study_id}/annotations.jsonl", headers=auth(people["admin"])))
    assert [r["explanation"] for r in raw if r["question_id"] == "problems"] == [FORMULA]  # JSONL keeps it as is


@pytest.mark.parametrize(("status", "public"), [("draft", False), ("open", True), ("closed", False)])
def test_an_unpublished_study_is_404_for_everyone_but_admins(hub_env, admin_user, people, client, status, public):
    seeded = seed_study(hub_env, admin_user, status=status, public=public)
    for name in ("conversations.jsonl", "annotations.csv", "annotations.jsonl", "references"):
        url = f"/api/studies/{seeded.study_id}/{name}"
        for headers in ({}, auth(people["other"])):
            response = client.get(url, headers=headers)
            assert response.status_code == 404, (name, response.text)
            assert response.json()["field"] == "study_id" and "PRIVATEQX9" not in response.text
        assert client.get(url, headers=auth(people["admin"])).status_code == 200
    assert client.get("/api/studies/999999/annotations.csv", headers=auth(people["admin"])).status_code == 404


def test_a_published_study_gives_anyone_the_participants_rows_only(hub_env, admin_user, client):
    seeded = seed_study(hub_env, admin_user, status="closed", public=True)
    _, rows = _jsonl(client.get(f"/api/studies/{seeded.study_id}/conversations.jsonl"))
    assert [r["conversation_id"] for r in rows] == list(seeded.chats[:2])  # no admin test chat
    assert all(m["error"] is None for r in rows for m in r["messages"])
    _, annotations = _csv(client.get(f"/api/studies/{seeded.study_id}/annotations.csv"))
    assert len(annotations) == 15 and "" not in {r["participant"] for r in annotations}
    # The hub's bulk downloads hold every published study, and nothing of an unpublished one.
    hidden = seed_study(hub_env, admin_user, status="closed", public=False, tag="-hidden")
    _, everything = _jsonl(client.get("/api/downloads/study_conversations.jsonl"))
    assert [(r["study_id"], r["conversation_id"]) for r in everything] == [
        (seeded.study_id, c) for c in seeded.chats[:2]
    ]
    _, studies = _jsonl(client.get("/api/downloads/studies.jsonl"))
    assert [s["id"] for s in studies] == [seeded.study_id] and hidden.study_id != seeded.study_id
    assert all("base_url" not in system and "system_prompt" not in system for system in studies[0]["systems"])


def test_snapshots_hold_published_studies_only_and_stay_byte_identical(hub_env, admin_user, tmp_path, run_cli):
    published = seed_study(hub_env, admin_user)
    hidden = seed_study(hub_env, admin_user, status="closed", public=False, tag="-hidden")
    with Session(hub_env) as session:
        study = session.get(Study, hidden.study_id)
        study.title = "HIDDEN STUDY QX9"
        session.add(study)
        session.commit()
    assert run_cli("export", "--out", tmp_path / "a").exit_code == 0
    assert run_cli("export", "--out", tmp_path / "b").exit_code == 0
    manifest, _ = snapshot_helpers.read_whole(tmp_path / "a")
    [version] = [p.name for p in (tmp_path / "a").iterdir() if p.is_dir() and not p.is_symlink()]
    first = snapshot_helpers.every_byte(tmp_path / "a" / version)
    assert first == snapshot_helpers.every_byte(tmp_path / "b" / version)
    assert manifest["tables"]["studies"] == 1
    assert manifest["tables"]["study_conversations"] == 2 and manifest["tables"]["study_annotations"] == 15
    for name, data in first.items():
        for private in (*PRIVATE_EXTERNAL_IDS, "HIDDEN STUDY QX9", "ADMIN TEST QX9", "PRIVATEQX9", "127.0.0.1:9"):
            assert private.encode() not in data, (name, private)
    database = sqlite3.connect(tmp_path / "a" / version / "chateval.sqlite")
    stored = database.execute("SELECT study_id, conversation_id, participant, messages FROM study_conversations")
    [(study_id, conversation_id, participant, messages), _] = stored.fetchall()
    assert (study_id, conversation_id, participant) == (published.study_id, published.chats[0], published.hashes[0])
    _assert_tree(json.loads(messages))
    database.close()
