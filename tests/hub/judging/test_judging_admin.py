"""Admins register judges and attach judges, rubrics and function metrics to datasets: every field bounded and
checked (a 4xx naming the field), only admins, every action audited, and a key is never stored or echoed."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.rubrics import shipped_rubrics
from hub.models import AuditEntry, Judge
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth
from tests.hub.judging.helpers import KEY_ENV, SECRET

JUDGE = {"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "m", "key_ref": KEY_ENV}


@pytest.fixture
def client(hub_env):
    with TestClient(create_app()) as client:
        yield client


def _field(response) -> str:
    body = response.json()
    if isinstance(body.get("detail"), list):
        return ".".join(str(p) for p in body["detail"][0]["loc"])
    return str(body.get("field") or body.get("detail"))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"base_url": "ftp://example.org/v1"}, "base_url"),
        ({"base_url": "https://user:pw@example.org/v1"}, "base_url"),
        ({"key_ref": SECRET}, "key_ref"),
        ({"template_version": "pairwise-v9"}, "template_version"),
        ({"temperature": 5}, "temperature"),
        ({"concurrency": 0}, "concurrency"),
        ({"max_tokens": 10**9}, "max_tokens"),
        ({"name": "x" * 121}, "name"),
        ({"model": "a|b"}, "model"),
        ({"api_key": SECRET}, "api_key"),
    ],
)
def test_bad_judge_fields_are_refused_naming_the_field_and_never_echo_a_key(client, people, change, field):
    response = client.post("/api/admin/judges", headers=auth(people["admin"]), json={**JUDGE, **change})
    assert response.status_code == 422, response.text
    assert field in _field(response)
    assert SECRET not in response.text


def test_only_admins_register_judges_and_the_key_reference_is_all_that_is_stored(client, people, hub_env, monkeypatch):
    assert client.post("/api/admin/judges", headers=auth(people["owner"]), json=JUDGE).status_code == 403
    assert client.get("/api/admin/judges", headers=auth(people["owner"])).status_code == 403
    monkeypatch.setenv(KEY_ENV, SECRET)
    created = client.post("/api/admin/judges", headers=auth(people["admin"]), json=JUDGE)
    assert created.status_code == 201
    assert created.json()["key_ref"] == KEY_ENV and created.json()["key_set"] is True
    assert client.post("/api/admin/judges", headers=auth(people["admin"]), json=JUDGE).status_code == 409
    listed = client.get("/api/admin/judges", headers=auth(people["admin"]))
    assert [j["name"] for j in listed.json()] == ["j1"] and SECRET not in listed.text
    with Session(hub_env) as session:
        judge = session.exec(select(Judge)).one()
        assert SECRET not in judge.model_dump_json()
        actions = [e.action for e in session.exec(select(AuditEntry))]
    assert "register_judge" in actions


def test_attachments_are_validated_and_audited(client, people, hub_env):
    admin = auth(people["admin"])
    judge_id = client.post("/api/admin/judges", headers=admin, json=JUDGE).json()["id"]
    url = f"/api/admin/datasets/{DATASET}/judging"
    good_rubric = shipped_rubrics()["helpfulness"].read_text()
    bad_weights = good_rubric.replace("weight: 0.4", "weight: 0.5")
    unknown_field = good_rubric.replace("fields: [context, response]", "fields: [context, answer]")
    cases = [
        ({"kind": "judge"}, 422, "judge_id"),
        ({"kind": "judge", "judge_id": 999}, 404, "judge_id"),
        ({"kind": "rubric", "judge_id": judge_id}, 422, "rubric_yaml"),
        ({"kind": "rubric", "judge_id": judge_id, "rubric_yaml": bad_weights}, 422, "rubric_yaml"),
        ({"kind": "rubric", "judge_id": judge_id, "rubric_yaml": unknown_field}, 422, "rubric_yaml"),
        ({"kind": "rubric", "judge_id": judge_id, "rubric_yaml": "x" * 70_000}, 422, "rubric_yaml"),
        ({"kind": "function_metric", "metric": "no-such-metric"}, 422, "metric"),
        ({"kind": "oracle"}, 422, "kind"),
    ]
    for body, status, field in cases:
        response = client.post(url, headers=admin, json=body)
        assert response.status_code == status, (body, response.text)
        assert field in _field(response) or field in response.text, (body, response.text)
    weights = client.post(url, headers=admin, json=cases[3][0]).json()
    assert "line" in str(weights) and "weight" in str(weights)  # the rubric's own message, naming the line
    assert (
        client.post(
            "/api/admin/datasets/no-such-set/judging", headers=admin, json={"kind": "judge", "judge_id": judge_id}
        ).status_code
        == 404
    )
    assert (
        client.post(url, headers=auth(people["owner"]), json={"kind": "judge", "judge_id": judge_id}).status_code == 403
    )
    ok = [
        {"kind": "judge", "judge_id": judge_id},
        {"kind": "rubric", "judge_id": judge_id, "rubric_yaml": good_rubric},
        {"kind": "function_metric", "metric": "length.words"},
    ]
    for body in ok:
        assert client.post(url, headers=admin, json=body).status_code == 201
        assert client.post(url, headers=admin, json=body).status_code == 409  # attached once
    listed = client.get(url, headers=admin).json()
    assert [(a["kind"], a["label"]) for a in listed] == [
        ("judge", str(judge_id)),
        ("rubric", "helpfulness@1"),
        ("function_metric", "length.words"),
    ]
    with Session(hub_env) as session:
        audited = [e.detail for e in session.exec(select(AuditEntry).where(AuditEntry.action == "attach_judging"))]
    assert [d["kind"] for d in audited] == ["judge", "rubric", "function_metric"]


def test_a_run_on_demand_needs_an_admin_and_something_attached(client, people, hub_env, baselines):
    from hub.models import Submission

    with Session(hub_env) as session:
        submission_id = session.exec(select(Submission.id)).first()
    url = f"/api/admin/submissions/{submission_id}/judge"
    assert client.post(url, headers=auth(people["owner"])).status_code == 403
    refused = client.post(url, headers=auth(people["admin"]))
    assert refused.status_code == 409 and "attached" in refused.text
    assert client.post("/api/admin/submissions/999999/judge", headers=auth(people["admin"])).status_code == 404
