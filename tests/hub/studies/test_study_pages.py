"""The study pages over HTTP: the admin form creates a study (a refused schema comes back with its line marked and the
form filled in), only admins see it; an invite link's page shows the study and joins only when the button is
pressed; the participant's home offers the study's systems."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from hub.web.app import create_app
from tests.hub.studies.helpers import SCHEMA_YAML

PASSWORD = "correct horse battery"


@pytest.fixture
def client(hub_env, people):
    with TestClient(create_app()) as client:
        yield client


def csrf(page_html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', page_html).group(1)


def log_in(client, email: str) -> None:
    token = csrf(client.get("/login").text)
    answer = client.post("/login", data={"csrf_token": token, "email": email, "password": PASSWORD})
    assert answer.status_code == 200, answer.text


def form(token: str, schema: str, **changes: str) -> dict[str, str]:
    values = {
        "csrf_token": token,
        "title": "Helpfulness",
        "instructions": "Chat, then rate.",
        "s0_label": "Local bot",
        "s0_base_url": "http://127.0.0.1:9/v1",
        "s0_model": "local-1",
        "s0_timeout_s": "5",
        "schema_text": schema,
        "schema_format": "yaml",
        "max_participants": "5",
        "open_now": "true",
    }
    values.update(changes)
    return values


def test_the_admin_form_marks_the_refused_line_then_creates_the_study(client):
    log_in(client, "admin@example.org")
    token = csrf(client.get("/admin/studies").text)
    one_point = SCHEMA_YAML.replace("[Useless, Weak, Fine, Good, Excellent]", "[Only]")
    refused = client.post("/admin/studies", data=form(token, one_point))
    assert refused.status_code == 422
    assert "line 6" in refused.text and "at least 2 points" in refused.text
    marked = re.findall(r'<li class="bad" aria-current="true"><code>(.*?)</code>', refused.text)
    assert marked == ["    labels: [Only]"]
    assert 'value="Local bot"' in refused.text  # the form comes back filled in

    created = client.post("/admin/studies", data=form(token, SCHEMA_YAML), follow_redirects=False)
    assert created.status_code == 303
    page = client.get(created.headers["location"])
    assert page.status_code == 200 and "How helpful is this reply?" in page.text
    study_page = created.headers["location"]
    bad_file = '{\n  "questions": [\n    {"id": "a", "kind": "likert", "question": "q", "labels": ["x"]}\n  ]\n}\n'
    upload = {"schema_file": ("schema.json", bad_file.encode(), "application/json")}
    again = client.post(f"{study_page}/schema", data={"csrf_token": token}, files=upload)
    assert again.status_code == 422 and "line 3" in again.text
    assert re.findall(r'<li class="bad" aria-current="true"><code>(.*?)</code>', again.text)[0].strip().startswith("{")
    good_file = {"schema_file": ("schema.yaml", SCHEMA_YAML.encode(), "text/yaml")}
    assert client.post(f"{study_page}/schema", data={"csrf_token": token}, files=good_file).status_code == 200
    assert "Annotation schema (version 2)" in client.get(study_page).text
    published = client.post(f"{study_page}/status", data={"csrf_token": token, "status": "open", "public": "true"})
    assert "Not published" not in published.text and 'id="toggle-public">Unpublish' in published.text
    invite = client.post(f"{created.headers['location']}/invites", data={"csrf_token": token, "label": "lab"})
    link = re.search(r'id="new-invite-url" href="[^"]*(/studies/join/[^"]+)"', invite.text).group(1)

    stranger = TestClient(client.app)
    shown = stranger.get(link)
    assert shown.status_code == 200 and "Chat, then rate." in shown.text
    assert stranger.get(created.headers["location"].replace("/admin", "")).status_code == 404  # not joined yet
    joined = stranger.post(link, data={"csrf_token": csrf(shown.text)}, follow_redirects=False)
    assert joined.status_code == 303
    home = stranger.get(joined.headers["location"])
    assert home.status_code == 200 and "Chat with Local bot" in home.text
    revoke = re.search(r'action="(/admin/studies/\d+/invites/\d+/revoke)"', client.get(study_page).text).group(1)
    client.post(revoke, data={"csrf_token": token})
    assert TestClient(client.app).get(link).status_code == 404  # a revoked link lets nobody new in
    system_id = re.search(r'name="system_id" value="(\d+)"', home.text).group(1)
    started = stranger.post(
        f"{joined.headers['location']}/conversations",
        data={"csrf_token": csrf(home.text), "system_id": system_id},
        follow_redirects=False,
    )
    assert started.status_code == 303  # a form, so its CSRF token travels as a field
    chat = stranger.get(started.headers["location"])
    config = json.loads(
        re.search(r'<script type="application/json" id="chat-config">(.*?)</script>', chat.text).group(1)
    )
    assert config["system_label"] == "Local bot" and config["questions"][0]["id"] == "helpful"
    assert config["someone_elses"] is False
    as_admin = client.get(started.headers["location"])
    assert as_admin.status_code == 200  # admins see every conversation, read-only
    assert '"someone_elses": true' in as_admin.text
    assert TestClient(client.app).get(started.headers["location"]).status_code == 404  # strangers none


def test_only_admins_see_the_study_pages(client):
    log_in(client, "owner@example.org")
    assert client.get("/admin/studies").status_code == 403
    assert client.get("/admin/studies/1").status_code == 403
