"""QA runs that cannot succeed say why and never show the key: an experiment without reasons (409), a pasted rubric
that does not parse or an unknown shipped one (422 naming the field), a key reference not set on the worker and an
endpoint that is down (the run fails naming the cause); an admin's grade must be PASSED or REDO on a reason of the
experiment."""

from __future__ import annotations

import socket

import pytest
from fastapi.testclient import TestClient

from hub.services.judging import rater_qa, registry
from hub.web.app import create_app
from tests.hub.conftest import auth, new_experiment
from tests.hub.judging.helpers import fast_retries
from tests.hub.rater_qa.helpers import KEY_ENV, SECRET, rate_with_reasons
from tests.hub.rater_qa.test_rater_qa_end_to_end import wait_for_run

PROMPTS = ["hov1-001", "hov1-002"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once closed


@pytest.fixture
def site(hub_env, people, admin_user, baselines):
    with TestClient(create_app(embedded_worker=True)) as client:
        yield client


def _judge(client, admin, base_url: str, name: str) -> int:
    created = client.post(
        "/api/admin/judges", headers=admin, json={"name": name, "base_url": base_url, "model": "m", "key_ref": KEY_ENV}
    )
    assert created.status_code == 201, created.text
    return created.json()["id"]


def test_qa_runs_that_cannot_succeed_are_refused_or_fail_saying_why(
    site, hub_env, people, admin_user, baselines, monkeypatch
):
    admin = auth(people["admin"])
    down = f"http://127.0.0.1:{_closed_port()}/v1"
    judge_id = _judge(site, admin, down, "down")
    empty = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="required")
    url = f"/api/admin/experiments/{empty.id}/qa"
    nothing = site.post(f"{url}/runs", headers=admin, json={"judge_id": judge_id})
    assert nothing.status_code == 409 and "no raters' reasons" in nothing.json()["error"]

    rate_with_reasons(hub_env, empty.id, n_raters=1, seed=3)
    for body, field in (
        ({"judge_id": judge_id, "rubric_yaml": "id: [unclosed"}, "rubric_yaml"),
        ({"judge_id": judge_id, "rubric": "no-such-rubric"}, "rubric"),
        ({"judge_id": judge_id, "rubric": "milo-qa", "extra": 1}, "extra"),
        ({"judge_id": 0}, "judge_id"),
    ):
        refused = site.post(f"{url}/runs", headers=admin, json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert field in refused.json()["field"], refused.json()
    assert site.post(f"{url}/runs", headers=admin, json={"judge_id": 999}).status_code == 404

    monkeypatch.delenv(KEY_ENV, raising=False)
    assert site.post(f"{url}/runs", headers=admin, json={"judge_id": judge_id}).status_code == 202
    failed = wait_for_run(site, url, admin)["run"]
    assert failed["status"] == "failed" and f"key reference {KEY_ENV} is not set" in failed["error"]

    monkeypatch.setenv(KEY_ENV, SECRET)
    # every retry still made against the endpoint that is down, with waits of milliseconds instead of up to 30 s
    monkeypatch.setattr(rater_qa, "endpoint_config", lambda judge: fast_retries(registry.endpoint_config(judge)))
    assert site.post(f"{url}/runs", headers=admin, json={"judge_id": judge_id}).status_code == 202
    view = wait_for_run(site, url, admin)
    assert view["run"]["status"] == "failed" and "every call failed" in view["run"]["error"], view["run"]
    assert SECRET not in str(view)
    page = site.get(f"/admin/experiments/{empty.id}/qa", headers={**admin, "Accept": "text/html"})
    assert "every call failed" in page.text and SECRET not in page.text


def test_an_admin_grade_is_passed_or_redo_on_a_reason_of_the_experiment(site, hub_env, people, admin_user, baselines):
    admin = auth(people["admin"])
    one = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="required")
    other = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="required")
    rate_with_reasons(hub_env, one.id, n_raters=1, seed=4)
    reason_id = site.get(f"/api/admin/experiments/{one.id}/qa", headers=admin).json()["rows"][0]["reason_id"]
    bad = site.post(
        f"/api/admin/experiments/{one.id}/qa/grades", headers=admin, json={"reason_id": reason_id, "status": "MAYBE"}
    )
    assert bad.status_code == 422 and bad.json()["field"] == "status"
    elsewhere = site.post(
        f"/api/admin/experiments/{other.id}/qa/grades", headers=admin, json={"reason_id": reason_id, "status": "REDO"}
    )
    assert elsewhere.status_code == 404 and elsewhere.json()["field"] == "reason_id"
    for status in ("REDO", "PASSED"):  # grading again replaces
        graded = site.post(
            f"/api/admin/experiments/{one.id}/qa/grades", headers=admin, json={"reason_id": reason_id, "status": status}
        )
        assert graded.json() == {"reason_id": reason_id, "status": status}
    view = site.get(f"/api/admin/experiments/{one.id}/qa", headers=admin).json()
    assert view["admin_graded"] == 1
    assert next(r for r in view["rows"] if r["reason_id"] == reason_id)["admin"] == "PASSED"
    assert view["agreement"]["n"] == 0 and view["agreement"]["cohen_kappa"] is None  # no judge run yet

    mode = site.post(f"/api/admin/experiments/{one.id}/qa/reasons", headers=admin, json={"reasons": "sometimes"})
    assert mode.status_code == 422 and mode.json()["field"] == "reasons"
    mode = site.post(f"/api/admin/experiments/{one.id}/qa/reasons", headers=admin, json={"reasons": "off"})
    assert mode.json() == {"experiment_id": one.id, "reasons": "off"}
    assert site.get(f"/api/admin/experiments/{one.id}/qa", headers=admin).json()["reasons_mode"] == "off"
