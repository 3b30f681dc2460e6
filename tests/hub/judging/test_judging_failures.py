"""Judging runs that cannot succeed fail visibly and say why, never showing a key: an endpoint refusing the key
(401 from the real local server), a key reference not set on the worker, an endpoint that is down; and a run
answered partly with unparseable grades records them as such (never guessed). Through the real job queue."""

from __future__ import annotations

import html
import json
import socket

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.llm.server import LocalChatServer
from evaluation.rubrics import shipped_rubrics
from hub.models import RubricGrade
from hub.services.judging import registry, runs
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, post
from tests.hub.judging.helpers import KEY_ENV, SECRET, fast_retries, judge_responder, wait_for


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(client, tokens, base_url: str, *, timeout_s: int = 5) -> dict:
    admin = auth(tokens["admin"])
    judge = client.post(
        "/api/admin/judges",
        headers=admin,
        json={"name": "j", "base_url": base_url, "model": "m", "key_ref": KEY_ENV, "timeout_s": timeout_s},
    ).json()
    rubric = {"kind": "rubric", "judge_id": judge["id"], "rubric_yaml": shipped_rubrics()["helpfulness"].read_text()}
    assert client.post(f"/api/admin/datasets/{DATASET}/judging", headers=admin, json=rubric).status_code == 201
    [submission] = post(client, tokens["owner"], {"is_public": "true"}).json()
    assert client.post(f"/api/admin/submissions/{submission['id']}/approve", headers=admin).status_code == 200
    return wait_for(
        client,
        f"/api/admin/submissions/{submission['id']}/judging",
        admin,
        lambda body: body["status"] in ("done", "failed"),
    )


@pytest.mark.parametrize("problem", ["wrong_key", "unset_key", "endpoint_down"])
def test_a_run_that_cannot_succeed_fails_saying_why_without_the_key(hub_env, people, monkeypatch, problem):
    if problem == "wrong_key" or problem == "endpoint_down":
        monkeypatch.setenv(KEY_ENV, SECRET)
    else:
        monkeypatch.delenv(KEY_ENV, raising=False)
    if problem == "endpoint_down":  # every retry still made, with waits of milliseconds instead of up to 30 s
        monkeypatch.setattr(runs, "endpoint_config", lambda judge: fast_retries(registry.endpoint_config(judge)))
    with LocalChatServer(responder=judge_responder, expected_key="another-key") as server:
        base_url = server.base_url if problem != "endpoint_down" else f"http://127.0.0.1:{_closed_port()}/v1"
        with TestClient(create_app(embedded_worker=True)) as client:
            run = _run(client, people, base_url, timeout_s=2)
            page = client.get("/admin/judging", headers={"Accept": "text/html", **auth(people["admin"])}).text
    assert run["status"] == "failed", run
    expected = {"wrong_key": "401", "unset_key": KEY_ENV, "endpoint_down": "connect"}[problem]
    assert expected.lower() in run["error"].lower(), run["error"]
    assert SECRET not in json.dumps(run) and SECRET not in page
    assert run["error"] in html.unescape(page)  # the admin sees why


def test_unparseable_grades_are_recorded_as_such_and_score_nothing(hub_env, people, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)

    def sometimes_rambling(body):
        reply = judge_responder(body)
        return "I would rather not say." if '"relevance"' in reply or "Relevance" in str(body) else reply

    server = LocalChatServer(responder=sometimes_rambling, expected_key=SECRET)
    with server, TestClient(create_app(embedded_worker=True)) as client:
        run = _run(client, people, server.base_url)
    assert run["status"] == "done", run
    with Session(hub_env) as session:
        grades = session.exec(select(RubricGrade)).all()
    assert grades and all(g.score is None and g.status is None for g in grades)
    relevance = [next(c for c in g.criteria if c["criterion"] == "relevance") for g in grades]
    assert all(c["status"] == "unparseable" and c["raw"] == "I would rather not say." for c in relevance)
    [step] = [v for k, v in run["detail"].items() if k.startswith("rubric:")]
    assert step["graded"] == 0 and step["items"] == len(grades)
