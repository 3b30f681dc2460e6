"""Uploads to the hub (API and the web form): a blank line is refused naming its line unless `allow_empty` says empty
responses are meant, a UTF-16 file is named as UTF-16 with the command that converts it, and an accepted file with
empty responses is scored and read back as it was sent."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub.models import Submission, SubmissionStatus
from hub.services.submissions.evaluation import EvaluationRun
from hub.services.submissions.results import read_responses
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, post, responses_file

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
FIELD = f"responses[{DATASET}]"


@pytest.fixture
def client(hub_env):
    with TestClient(create_app()) as client:
        yield client


def with_blank(line_index: int = 4) -> tuple[bytes, list[str]]:
    lines = responses_file().decode().splitlines()
    lines[line_index] = ""
    return ("\n".join(lines) + "\n").encode(), lines


def test_api_refuses_a_blank_line_naming_it(client, people):
    data, _ = with_blank()
    response = post(client, people["owner"], content=data, filename="gaps.txt")
    assert response.status_code == 422
    assert response.json() == {
        "error": "gaps.txt, line 5: blank line: an empty response; if empty responses are meant, say so: "
        "--allow-empty (on the hub: allow_empty)",
        "field": FIELD,
    }


def test_api_accepts_empty_responses_when_allowed_and_scores_them(client, people, hub_env):
    data, lines = with_blank()
    response = post(client, people["owner"], {"allow_empty": "true"}, content=data, filename="gaps.txt")
    assert response.status_code == 201, response.text
    submission_id = response.json()[0]["id"]
    with Session(hub_env) as session:
        submission = session.get(Submission, submission_id)
        submission.status = SubmissionStatus.approved
        session.add(submission)
        session.commit()
    assert EvaluationRun(hub_env, get_storage(), submission_id).run() == SubmissionStatus.evaluated
    with Session(hub_env) as session:
        submission = session.get(Submission, submission_id)
        assert read_responses(get_storage(), submission, load_dataset(DATASET)) == lines
    shown = client.get(f"/api/submissions/{submission_id}", headers=auth(people["owner"])).json()
    scores = {s["metric"]: s for s in shown["scores"]}
    assert "distinct-1" in scores and "bleu-2" in scores


def test_api_names_utf16(client, people):
    data = responses_file().decode().encode("utf-16")
    response = post(client, people["owner"], content=data, filename="win.txt")
    assert response.status_code == 422
    assert response.json()["error"] == (
        "win.txt: file is UTF-16 (little-endian, with a byte-order mark) text, not UTF-8; convert it first, e.g. "
        "iconv -f UTF-16 -t UTF-8 win.txt > win.utf8.txt"
    )


def test_openapi_documents_allow_empty(client):
    schema = client.get("/openapi.json").json()
    form = schema["paths"]["/api/submissions"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["properties"]["allow_empty"]["type"] == "boolean"


def test_the_web_form_has_the_box_and_keeps_it_on_a_refusal(hub_env, people):
    with TestClient(create_app(), headers={"accept": "text/html"}, follow_redirects=False) as browser:
        login_page = browser.get("/login")
        token = CSRF_FIELD.search(login_page.text).group(1)
        data = {"csrf_token": token, "email": "owner@example.org", "password": "correct horse battery"}
        assert browser.post("/login", data=data).status_code == 303
        page = browser.get("/submit")
        assert 'name="allow_empty"' in page.text and "meant as empty responses" in page.text
        token = CSRF_FIELD.search(page.text).group(1)
        content, _ = with_blank(9)
        files = {FIELD: ("gaps.txt", content, "text/plain")}
        refused = browser.post("/submit", data={"csrf_token": token, "name": "Gappy"}, files=files)
        assert refused.status_code == 422
        assert "gaps.txt, line 10: blank line: an empty response" in refused.text
        assert not re.search(r'name="allow_empty" value="on" checked', refused.text)
        token = CSRF_FIELD.search(refused.text).group(1)
        form = {"csrf_token": token, "name": "Gappy", "allow_empty": "on"}
        accepted = browser.post("/submit", data=form, files={FIELD: ("gaps.txt", content, "text/plain")})
        assert accepted.status_code == 303, accepted.text
    with Session(hub_env) as session:
        assert len(session.exec(select(Submission)).all()) == 1
