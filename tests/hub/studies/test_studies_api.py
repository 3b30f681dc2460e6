"""Studies over the API: admins create them (systems, schema, cap), download and re-upload the schema as a new
version, make invite links; browsers join through them up to the caps; nobody else sees a study."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import AuditEntry, Rater, StudySchema
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.studies.helpers import SCHEMA_YAML, join, study_body

URL = "http://127.0.0.1:9/v1"


@pytest.fixture
def client(hub_env):
    with TestClient(create_app()) as client:
        yield client


def _create(client, people, **changes):
    response = client.post("/api/studies", json=study_body(URL, **changes), headers=auth(people["admin"]))
    assert response.status_code == 201, response.text
    return response.json()


def test_an_admin_creates_a_study_and_only_admins_may(client, people, hub_env):
    study = _create(client, people)
    assert study["schema_version"] == 1 and study["status"] == "open"
    assert [q["id"] for q in study["schema"]["questions"]] == ["helpful", "safe", "topic", "problems", "note"]
    assert study["systems"][0]["history_turns"] == 6 and study["systems"][0]["key_set"] is False
    refused = client.post("/api/studies", json=study_body(URL), headers=auth(people["owner"]))
    assert refused.status_code == 403
    assert client.get(f"/api/studies/{study['id']}", headers=auth(people["owner"])).status_code == 404
    assert client.get("/api/studies/999", headers=auth(people["admin"])).status_code == 404
    with Session(hub_env) as session:
        assert session.exec(select(AuditEntry).where(AuditEntry.action == "create_study")).one()


BAD_STUDIES = [
    (
        {"schema_text": SCHEMA_YAML.replace("[Useless, Weak, Fine, Good, Excellent]", "[One]")},
        "schema_text",
        "line 6",
    ),
    ({"schema_text": "questions:\n  - id: a\n    kind: nope\n    question: q\n"}, "schema_text", "line 3"),
    (
        {
            "schema_text": None,
            "schema": {"questions": [{"id": "a", "kind": "likert", "question": "q", "labels": ["x"]}]},
        },
        "schema",
        "2 points",
    ),
    ({"schema_text": None}, "schema", "schema"),
    ({"systems": []}, "systems", ""),
    ({"systems": [{"label": "x", "base_url": "ftp://x", "model": "m"}]}, "systems.0.base_url", ""),
    (
        {"systems": [{"label": "x", "base_url": URL, "model": "m", "key_ref": "sk-secret-value"}]},
        "systems.0.key_ref",
        "",
    ),
    (
        {"systems": [{"label": "x", "base_url": URL, "model": "m", "history_turns": 0}]},
        "systems.0.history_turns",
        "",
    ),
    ({"title": "x" * 201}, "title", ""),
    ({"max_participants": 0}, "max_participants", ""),
    ({"assistance": {"mode": "pre_annotation"}}, "assistance", "judge"),
    ({"assistance": {"mode": "pre_annotation", "judge_id": 77}}, "assistance.judge_id", "judge"),
    ({"colour": "blue"}, "colour", ""),
]


def test_a_bad_study_is_refused_naming_the_field_and_nothing_is_written(client, people, hub_env):
    for changes, field, words in BAD_STUDIES:
        response = client.post("/api/studies", json=study_body(URL, **changes), headers=auth(people["admin"]))
        assert response.status_code in (404, 422), response.text
        body = response.json()
        assert body["field"] == field and words in body["error"], (changes, body)
        assert "sk-secret-value" not in response.text
    with Session(hub_env) as session:
        assert session.exec(select(StudySchema)).first() is None


def test_the_schema_downloads_and_a_re_upload_is_a_new_version(client, people):
    study = _create(client, people)
    admin = auth(people["admin"])
    as_yaml = client.get(f"/api/studies/{study['id']}/schema", headers=admin)
    as_json = client.get(f"/api/studies/{study['id']}/schema?format=json", headers=admin)
    assert as_yaml.status_code == as_json.status_code == 200
    assert (
        as_yaml.headers["content-type"].startswith("text/yaml")
        and "attachment" in as_yaml.headers["content-disposition"]
    )
    assert as_json.json() == study["schema"]
    edited = as_yaml.text.replace("How helpful is this reply?", "How useful is this reply?")
    response = client.put(
        f"/api/studies/{study['id']}/schema", json={"schema_text": edited, "schema_format": "yaml"}, headers=admin
    )
    assert response.status_code == 200 and response.json()["version"] == 2
    assert client.get(f"/api/studies/{study['id']}", headers=admin).json()["schema_version"] == 2
    old = client.get(f"/api/studies/{study['id']}/schema?format=json&version=1", headers=admin).json()
    assert old["questions"][0]["question"] == "How helpful is this reply?"
    bad = client.put(
        f"/api/studies/{study['id']}/schema",
        json={"schema_text": as_json.text.replace('"likert"', '"slider"'), "schema_format": "json"},
        headers=admin,
    )
    assert bad.status_code == 422 and bad.json()["field"] == "schema_text" and "line 5" in bad.json()["error"]
    assert (
        client.put(
            f"/api/studies/{study['id']}/schema", json={"schema_text": edited}, headers=auth(people["owner"])
        ).status_code
        == 404
    )


def test_browsers_join_through_invites_up_to_the_caps(client, people, hub_env):
    study = _create(client, people, max_participants=3)
    admin = auth(people["admin"])
    invite = client.post(f"/api/studies/{study['id']}/invites", json={"max_participants": 2}, headers=admin).json()
    assert invite["url"].endswith(f"/studies/join/{invite['token']}")
    joined = []
    for _ in range(2):
        with TestClient(create_app()) as browser:
            joined.append(join(browser, invite["token"]))
            again = browser.post(f"/api/study-invites/{invite['token']}/join").json()
            assert again["participant"]["id"] == joined[-1]["participant"]["id"]  # the same browser, the same person
            seen = browser.get(f"/api/studies/{study['id']}").json()
            assert "base_url" not in seen["systems"][0] and seen["schema_version"] == 1
    with TestClient(create_app()) as browser:
        full = browser.post(f"/api/study-invites/{invite['token']}/join")
        assert full.status_code == 409
    second = client.post(f"/api/studies/{study['id']}/invites", json={"max_participants": 5}, headers=admin).json()
    with TestClient(create_app()) as browser:
        join(browser, second["token"])
    with TestClient(create_app()) as browser:
        assert browser.post(f"/api/study-invites/{second['token']}/join").status_code == 409  # the study's cap
    client.post(f"/api/studies/{study['id']}/invites/{second['id']}/revoke", headers=admin)
    with TestClient(create_app()) as browser:
        assert browser.post(f"/api/study-invites/{second['token']}/join").status_code == 404
        assert browser.post("/api/study-invites/csi_nonsense/join").status_code == 404
        assert browser.get(f"/api/studies/{study['id']}").status_code == 404
    with Session(hub_env) as session:
        assert len(session.exec(select(Rater).where(Rater.backend == "study")).all()) == 3
