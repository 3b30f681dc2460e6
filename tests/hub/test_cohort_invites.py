"""Cohort invite links against one client posing as many raters: a cap on the raters a link creates (set by the
admin), a per-client limit on new raters (429 with Retry-After), raters created in a burst from one client flagged
in the screening, and a revoked invite's task not submittable through another invite of the same study."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from hub import settings
from hub.web.app import create_app
from tests.hub.conftest import auth, new_experiment

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def app(hub_env):
    return create_app()


@pytest.fixture
def api(app) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


def from_address(app, address: str) -> TestClient:
    return TestClient(app, client=(address, 40000))


def make_invite(api: TestClient, admin_token: str, experiment_id: int, **body) -> dict:
    created = api.post(f"/api/experiments/{experiment_id}/invites", headers=auth(admin_token), json=body)
    assert created.status_code == 201, created.text
    return created.json()


def claim(client: TestClient, token: str, label: str):
    return client.post(f"/api/rate/{token}/claim", params={"rater_label": label})


def answer(client: TestClient, token: str, task: dict):
    choices = {str(item["id"]): "left" for item in task["items"]}
    return client.post(
        f"/api/rate/{token}/assignments/{task['assignment_id']}", json={"key": task["key"], "choices": choices}
    )


def test_a_revoked_invites_task_cannot_be_submitted_through_another_invite(hub_env, people, admin_user, baselines, api):
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=["hov1-001", "hov1-002"])
    first = make_invite(api, people["admin"], experiment.id)
    task = claim(api, first["token"], "").json()
    revoked = api.post(f"/api/experiments/{experiment.id}/invites/{first['id']}/revoke", headers=auth(people["admin"]))
    assert revoked.status_code == 200
    second = make_invite(api, people["admin"], experiment.id, cohort=True)
    refused = answer(api, second["token"], task)
    assert refused.status_code == 403, refused.text
    assert "another invite" in refused.json()["error"]
    assert answer(api, first["token"], task).status_code == 404  # the revoked link itself is dead
    mine = claim(api, second["token"], "me").json()  # the second link's own raters still submit
    assert answer(api, second["token"], mine).status_code == 200


def test_a_cohort_link_creates_at_most_its_cap_of_raters(hub_env, people, admin_user, baselines, api, app):
    experiment = new_experiment(hub_env, admin_user, baselines, raters_per_prompt=5)
    invite = make_invite(api, people["admin"], experiment.id, cohort=True, max_raters=3)
    assert invite["max_raters"] == 3
    default = make_invite(api, people["admin"], experiment.id, cohort=True)
    assert default["max_raters"] == 50
    too_big = api.post(
        f"/api/experiments/{experiment.id}/invites", headers=auth(people["admin"]), json={"max_raters": 10**20}
    )
    assert too_big.status_code == 422 and "max_raters" in too_big.text
    for i in range(3):  # three clients, three raters
        with from_address(app, f"10.1.0.{i}") as client:
            assert claim(client, invite["token"], f"r{i}").status_code == 200
    with from_address(app, "10.1.0.9") as client:
        full = claim(client, invite["token"], "r9")
        assert full.status_code == 409, full.text
        assert "3 raters" in full.json()["error"]
        assert claim(client, default["token"], "r9").status_code == 200  # another link has room
    with from_address(app, "10.1.0.0") as client:  # a rater it already has keeps working
        assert claim(client, invite["token"], "r0").status_code == 200


def test_one_client_cannot_become_many_raters_quickly(hub_env, people, admin_user, baselines, api, app):
    experiment = new_experiment(hub_env, admin_user, baselines, raters_per_prompt=10)
    invite = make_invite(api, people["admin"], experiment.id, cohort=True)
    with from_address(app, "10.2.0.1") as client:
        for i in range(5):
            assert claim(client, invite["token"], f"sock{i}").status_code == 200
        refused = claim(client, invite["token"], "sock5")
        assert refused.status_code == 429, refused.text
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert claim(client, invite["token"], "sock0").status_code == 200  # an existing rater is not limited
        page = client.get(f"/rate/{invite['token']}", headers={"accept": "text/html"})  # a new browser: a new rater
        assert page.status_code == 429 and "too many new raters" in page.text
    with from_address(app, "10.2.0.2") as other:
        assert claim(other, invite["token"], "honest").status_code == 200


def test_the_screening_shows_raters_created_in_a_burst_from_one_client(
    hub_env, people, admin_user, baselines, api, app, monkeypatch
):
    monkeypatch.setenv("HUB_NEW_RATERS_PER_CLIENT", "100/minute")
    settings.get_settings.cache_clear()
    experiment = new_experiment(hub_env, admin_user, baselines, raters_per_prompt=10, prompt_ids=["hov1-001"])
    invite = make_invite(api, people["admin"], experiment.id, cohort=True)
    with from_address(app, "10.3.0.1") as burst, from_address(app, "10.3.0.2") as single:
        for i in range(4):
            task = claim(burst, invite["token"], f"sock{i}").json()
            assert answer(burst, invite["token"], task).status_code == 200
        task = claim(single, invite["token"], "alone").json()
        assert answer(single, invite["token"], task).status_code == 200
    view = api.get(f"/api/experiments/{experiment.id}", headers=auth(people["admin"]))
    assert view.status_code == 200, view.text
    screening = view.json()["raters"]
    assert sorted(q["client_burst"] for q in screening) == [1, 4, 4, 4, 4]
    flagged = [q for q in screening if "client_burst" in q["flag_codes"]]
    assert len(flagged) == 4
    assert all("4 raters created from one client within a minute" in "; ".join(q["flags"]) for q in flagged)
    with TestClient(app, headers={"accept": "text/html"}) as browser:
        token = CSRF_FIELD.search(browser.get("/login").text).group(1)
        form = {"csrf_token": token, "email": "admin@example.org", "password": "correct horse battery"}
        assert browser.post("/login", data=form, follow_redirects=False).status_code == 303
        page = browser.get(f"/admin/experiments/{experiment.id}")
        assert page.text.count("burst \N{MULTIPLICATION SIGN}4") == 4
        assert 'name="max_raters"' in page.text
