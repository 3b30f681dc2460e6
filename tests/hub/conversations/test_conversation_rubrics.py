"""A conversation set naming a dataset is also graded by the rubrics an admin attached to that dataset: the real
local endpoint server plays the judge (a rule: grade 1 + words // 4, so the helpfulness score is grade / 5) behind
the real client, through the real job queue; the key appears nowhere."""

from __future__ import annotations

import json
import statistics

import pytest
from fastapi.testclient import TestClient

from evaluation.llm.server import LocalChatServer
from evaluation.rubrics import shipped_rubrics
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth
from tests.hub.conversations.helpers import conversation_lines, jsonl, upload, wait_evaluated
from tests.hub.judging.helpers import KEY_ENV, SECRET, grade_of, judge_responder

SCORE = "rubric-helpfulness.score"


@pytest.fixture
def judge_server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with LocalChatServer(responder=judge_responder, expected_key=SECRET) as server:
        yield server


def test_the_datasets_rubric_grades_every_assistant_turn(hub_env, people, judge_server):
    records = conversation_lines(6, seed=21)
    admin, owner = auth(people["admin"]), people["owner"]
    with TestClient(create_app(embedded_worker=True)) as client:
        judge = client.post(
            "/api/admin/judges",
            headers=admin,
            json={"name": "local", "base_url": judge_server.base_url, "model": "rule-judge", "key_ref": KEY_ENV},
        )
        assert judge.status_code == 201, judge.text
        rubric = {
            "kind": "rubric",
            "judge_id": judge.json()["id"],
            "rubric_yaml": shipped_rubrics()["helpfulness"].read_text(),
        }
        assert client.post(f"/api/admin/datasets/{DATASET}/judging", headers=admin, json=rubric).status_code == 201

        unknown = upload(client, owner, jsonl(records), dataset="no-such-dataset")
        assert unknown.status_code == 400 and unknown.json()["field"] == "dataset"
        created = upload(client, owner, jsonl(records), dataset=DATASET)
        assert created.status_code == 201, created.text
        body = wait_evaluated(client, owner, created.json()["id"])
        assert body["status"] == "evaluated", body
        assert body["dataset"] == DATASET
        assert any(m["metric"] == "rubric-helpfulness" for m in body["metrics"])
        download = client.get(f"/api/conversation-sets/{body['id']}/turns.jsonl", headers=auth(owner)).text
        page = client.get(f"/conversation-sets/{body['id']}", headers={**auth(owner), "Accept": "text/html"}).text
    turns = [json.loads(line) for line in download.splitlines()]
    turns = [t for t in turns if t["kind"] == "turn"]
    texts = {(r["id"], i): m["content"] for r in records for i, m in enumerate(r["messages"])}
    graded = 0
    for turn in turns:
        text = texts[(turn["conversation"], turn["turn"])]
        if turn["role"] == "assistant":
            assert turn["values"][SCORE] == pytest.approx(grade_of(text) / 5, abs=1e-12), turn
            assert turn["details"]["rubric-helpfulness"]["status"] in ("PASSED", "REDO")
            graded += 1
        else:
            assert SCORE not in turn["values"]
    assert graded == sum(m["role"] == "assistant" for r in records for m in r["messages"])
    by_system: dict[str, list[float]] = {}
    for record in records:
        for message in record["messages"]:
            if message["role"] == "assistant":
                by_system.setdefault(record["system"], []).append(grade_of(message["content"]) / 5)
    [assistant] = [g for g in body["aggregates"] if g["role"] == "assistant"]
    for row in assistant["rows"]:
        if row["metric"] == SCORE:
            assert row["mean"] == pytest.approx(statistics.fmean(by_system[row["system"]]), abs=1e-12)
    assert SECRET not in download and SECRET not in page and SECRET not in json.dumps(body)
