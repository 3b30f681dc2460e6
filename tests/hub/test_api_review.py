"""Admin review through the API: approval queues the evaluation, rejection carries a reason, all audited."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from hub.web.app import create_app
from tests.hub.conftest import auth, post


@pytest.fixture
def client(hub_env):
    with TestClient(create_app(embedded_worker=True)) as client:
        yield client


def wait_for_status(client, token, submission_id, wanted, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/submissions/{submission_id}", headers=auth(token)).json()
        if body["status"] == wanted:
            return body
        time.sleep(0.2)
    raise AssertionError(f"submission {submission_id} stayed {body['status']}: {body}")


def test_approval_runs_the_evaluation_and_scores_appear(client, people):
    [submission] = post(client, people["owner"], {"is_public": "true"}).json()
    queue = client.get("/api/admin/queue", headers=auth(people["admin"])).json()
    assert [s["id"] for s in queue] == [submission["id"]]
    approved = client.post(f"/api/admin/submissions/{submission['id']}/approve", headers=auth(people["admin"]))
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    body = wait_for_status(client, people["owner"], submission["id"], "evaluated")
    metrics = {s["metric"]: s for s in body["scores"]}
    assert {"distinct-1", "distinct-2", "avg-length", "bleu-2"} <= set(metrics)
    assert metrics["bleu-2"]["signature"].startswith("bleu-2|v1|")
    # Public once evaluated: an anonymous visitor sees it too, without the private error field.
    anonymous = client.get(f"/api/submissions/{submission['id']}").json()
    assert anonymous["status"] == "evaluated" and "error" not in anonymous


def test_rerun_keeps_the_scores_without_duplicates(client, people):
    [submission] = post(client, people["owner"]).json()
    client.post(f"/api/admin/submissions/{submission['id']}/approve", headers=auth(people["admin"]))
    first = wait_for_status(client, people["owner"], submission["id"], "evaluated")["scores"]
    rerun = client.post(f"/api/admin/submissions/{submission['id']}/rerun", headers=auth(people["admin"]))
    assert rerun.status_code == 200
    again = wait_for_status(client, people["owner"], submission["id"], "evaluated")["scores"]
    assert again == first


def test_rejection_reason_reaches_the_researcher(client, people):
    [submission] = post(client, people["owner"]).json()
    rejected = client.post(
        f"/api/admin/submissions/{submission['id']}/reject",
        headers=auth(people["admin"]),
        json={"reason": "responses are copies of the references"},
    )
    assert rejected.status_code == 200
    body = client.get(f"/api/submissions/{submission['id']}", headers=auth(people["owner"])).json()
    assert (body["status"], body["review_reason"]) == ("rejected", "responses are copies of the references")
    empty = client.post(
        f"/api/admin/submissions/{submission['id']}/reject", headers=auth(people["admin"]), json={"reason": " "}
    )
    assert empty.status_code == 409  # already rejected: nothing to review


def test_researchers_cannot_review_and_everything_is_audited(client, people):
    [submission] = post(client, people["owner"]).json()
    for role in ("owner", "other"):
        response = client.post(f"/api/admin/submissions/{submission['id']}/approve", headers=auth(people[role]))
        assert response.status_code == 403
    assert client.get("/api/admin/audit", headers=auth(people["other"])).status_code == 403
    client.post(
        f"/api/admin/submissions/{submission['id']}/reject",
        headers=auth(people["admin"]),
        json={"reason": "duplicate of another system"},
    )
    log = client.get("/api/admin/audit", headers=auth(people["admin"])).json()
    assert [(e["action"], e["target"]) for e in log] == [("reject", f"submission #{submission['id']}")]
    assert log[0]["detail"]["reason"] == "duplicate of another system"


def test_unknown_submission_is_404_for_admins_too(client, people):
    response = client.post("/api/admin/submissions/999/approve", headers=auth(people["admin"]))
    assert response.status_code == 404 and response.json()["error"] == "no submission #999"
