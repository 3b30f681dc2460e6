"""Provisional results: an open experiment's numbers are marked provisional wherever they appear, and the judgements
of a rater the automatic screening flagged stay out of public numbers until an admin decides (include or exclude).

The scenario of the issue: 36 assignments (120 prompts, 10 per task, 3 raters per prompt), one done, by a rater
who always picks the left reply at once (screening flags: choice_bias, too_fast)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub.models import AuditEntry, Rater
from hub.services.human import assignments, raters
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, new_experiment

HTML = {"Accept": "text/html"}


def _always_left(session: Session, experiment, name: str) -> Rater:
    rater = raters.rater_for(session, "hub", name)
    assignment = assignments.claim_task(session, experiment, rater)
    items = assignments.task_items(session, assignment.task_id)
    assignments.submit(session, assignment, {item.id: "left" for item in items})
    return rater


@pytest.fixture
def open_experiment(hub_env, baselines, admin_user, people):
    prompt_ids = load_dataset(DATASET).prompt_ids[:120]
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=prompt_ids)
    with Session(hub_env) as session:
        rater = _always_left(session, experiment, "worker-clicker-1")
        rater_id = rater.id
    with TestClient(create_app()) as client:
        yield client, experiment, rater_id, auth(people["admin"])


def _cell(client, baselines) -> dict:
    board = client.get(f"/api/leaderboards/{DATASET}").json()
    row = next(r for r in board["rows"] if r["system_id"] == baselines["echo"])
    return row["human"][f"human:{baselines['retrieval']}"]


def _marked(html: str) -> bool:
    return re.search(r'class="[^"]*\bprovisional\b', html) is not None


def test_open_experiment_with_a_flagged_rater_is_provisional_and_held_out(open_experiment, baselines, hub_env):
    client, experiment, _, admin = open_experiment
    # the rater was flagged by the screening (admins see why, and that the judgements wait for their decision)
    view = client.get(f"/api/experiments/{experiment.id}", headers=admin).json()
    assert view["progress"]["assignments_needed"] == 36 and view["progress"]["assignments_done"] == 1
    (flagged,) = [r for r in view["raters"] if r["flags"]]
    assert {"choice_bias", "too_fast"} <= set(flagged["flag_codes"])
    assert view["held_out"]["rater_hashes"] == [flagged["rater"]]

    public = client.get(f"/api/experiments/{experiment.id}").json()
    assert public["provisional"] is True
    assert public["summary"]["n"] == 0 and public["summary"]["win_rate"] is None  # no "80.0% [49.0%, 94.3%]"
    assert public["held_out"]["raters"] == 1 and public["held_out"]["judgements"] > 0

    cell = _cell(client, baselines)
    assert cell["provisional"] is True and cell["n"] == 0 and cell["held_out_judgements"] > 0
    assert client.get("/api/experiments").json()[0]["provisional"] is True
    profile = client.get(f"/api/systems/{baselines['echo']}").json()
    assert profile["human"][0]["provisional"] is True and profile["human"][0]["summary"]["n"] == 0

    for url in (
        f"/leaderboards/{DATASET}",
        f"/experiments/{experiment.id}",
        "/experiments",
        f"/systems/{baselines['echo']}",
    ):
        page = client.get(url, headers=HTML)
        assert page.status_code == 200, url
        assert _marked(page.text), f"{url} does not mark the open experiment as provisional"
        assert "held out" in page.text, url


def test_an_admin_decision_releases_the_judgements_and_is_audited(open_experiment, baselines, hub_env):
    client, experiment, rater_id, admin = open_experiment
    response = client.post(f"/api/raters/{rater_id}/exclusion", json={"excluded": False}, headers=admin)
    assert response.status_code == 200, response.text
    assert response.json()["reviewed_at"] is not None
    with Session(hub_env) as session:
        assert session.get(Rater, rater_id).reviewed_at is not None
        actions = [a.action for a in session.exec(select(AuditEntry))]
        assert "include_rater" in actions
    public = client.get(f"/api/experiments/{experiment.id}").json()
    assert public["summary"]["n"] > 0 and public["held_out"]["raters"] == 0
    assert public["provisional"] is True  # still open: provisional, though nothing is held out
    assert _cell(client, baselines)["n"] == public["summary"]["n"]

    # closing the experiment makes its numbers final everywhere
    assert client.post(f"/api/experiments/{experiment.id}/close", headers=admin).status_code == 200
    public = client.get(f"/api/experiments/{experiment.id}").json()
    assert public["provisional"] is False and public["experiment"]["provisional"] is False
    assert _cell(client, baselines)["provisional"] is False
    assert not _marked(client.get(f"/leaderboards/{DATASET}", headers=HTML).text)


def test_an_exclusion_decision_keeps_them_out_for_good(open_experiment, baselines, hub_env):
    client, experiment, rater_id, admin = open_experiment
    body = {"excluded": True, "reason": "always left, 0.4 s per judgement"}
    assert client.post(f"/api/raters/{rater_id}/exclusion", json=body, headers=admin).status_code == 200
    public = client.get(f"/api/experiments/{experiment.id}").json()
    assert public["summary"]["n"] == 0
    assert public["held_out"]["raters"] == 0 and public["excluded_raters"] == 1
