"""The submissions API: token auth, upload validation with precise messages, and the visibility matrix."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from hub.models import Submission, SubmissionStatus
from hub.services.accounts.accounts import revoke_token
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, post, responses_file


@pytest.fixture
def client(hub_env):
    with TestClient(create_app()) as client:
        yield client


def test_owner_submits_and_follows_status(client, people):
    created = post(client, people["owner"], {"description": "seq2seq", "is_public": "true"})
    assert created.status_code == 201, created.text
    [submission] = created.json()
    assert (submission["status"], submission["dataset"], submission["system"]["name"]) == (
        "submitted",
        DATASET,
        "My bot",
    )
    shown = client.get(f"/api/submissions/{submission['id']}", headers=auth(people["owner"]))
    assert shown.status_code == 200 and shown.json()["status"] == "submitted"


def test_bad_file_gets_the_toolkits_message(client, people):
    response = post(client, people["owner"], content=responses_file(["only one line"]), filename="short.txt")
    assert response.status_code == 422
    assert response.json() == {
        "error": f"short.txt: expected 120 lines (one response per prompt of dataset {DATASET}), found 1",
        "field": f"responses[{DATASET}]",
    }


def test_binary_upload_names_the_line(client, people):
    response = post(client, people["owner"], content=b"fine\n\x00\x01binary\n", filename="model.bin")
    assert response.status_code == 422
    assert "model.bin, line 2: binary data" in response.json()["error"]


def test_no_token_and_revoked_token_are_401(client, people, hub_env):
    assert post(client, None).status_code == 401
    with Session(hub_env) as session:
        from sqlmodel import select

        from hub.models import ApiToken, User

        owner = session.exec(select(User).where(User.email == "owner@example.org")).one()
        token = session.exec(select(ApiToken).where(ApiToken.user_id == owner.id)).one()
        revoke_token(session, owner, token.id)
    response = post(client, people["owner"])
    assert response.status_code == 401 and response.json()["error"] == "invalid or revoked API token"


@pytest.mark.parametrize("status", ["submitted", "evaluated"])
@pytest.mark.parametrize("public", [True, False])
def test_visibility_matrix(client, people, hub_env, status, public):
    [submission] = post(client, people["owner"], {"is_public": str(public).lower()}).json()
    with Session(hub_env) as session:
        session.get(Submission, submission["id"]).status = SubmissionStatus(status)
        session.commit()
    visible_to_all = public and status == "evaluated"
    expected = {None: visible_to_all, "other": visible_to_all, "owner": True, "admin": True}
    for viewer, visible in expected.items():
        response = client.get(f"/api/submissions/{submission['id']}", headers=auth(people[viewer]) if viewer else {})
        assert response.status_code == (200 if visible else 404), (viewer, response.text)
        if not visible:  # indistinguishable from an id that does not exist
            assert response.json() == {"error": f"no submission #{submission['id']}", "field": None}
        elif viewer in (None, "other"):
            assert "error" not in response.json()  # failure details are for owner and admins only
