"""Mechanical Turk's ExternalQuestion flow against the hub's own pages: MTurk frames the task page with its query
parameters (`assignmentId`, `hitId`, `workerId`, `turkSubmitTo`), the worker previews, accepts, answers and
submits; the finished page hands the assignment back to MTurk; the poll approves it. MTurk itself is stubbed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from sqlmodel import Session, func, select

from hub import settings
from hub.models import Assignment, AssignmentStatus, Experiment, Rater, Rating
from hub.services.human import assignments, mturk
from hub.web.app import create_app
from tests.hub.conftest import new_experiment
from tests.hub.test_mturk import (
    PUBLIC_URL,
    assignment_id,
    hit_id,
    launched,
    listed,
    make_systems,
    page,
    stubbed_client,
)

HTML = {"Accept": "text/html"}
WORKER = "A3WORKERSECRET42"
SANDBOX_SUBMIT = "https://workersandbox.mturk.com"


@dataclass
class Form:
    action: str | None = None
    hidden: dict[str, str] = field(default_factory=dict)
    radios: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # name -> (value, disabled)
    buttons: int = 0


class Forms(HTMLParser):
    def __init__(self, html: str):
        super().__init__()
        self.forms: list[Form] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append(Form(action=attrs.get("action")))
        elif tag == "input" and self.forms:
            kind, name = attrs.get("type"), attrs.get("name", "")
            if kind == "hidden":
                self.forms[-1].hidden[name] = attrs.get("value") or ""
            elif kind == "radio":
                self.forms[-1].radios.setdefault(name, []).append((attrs["value"], "disabled" in attrs))
        elif tag == "button" and self.forms:
            self.forms[-1].buttons += 1


def only_form(html: str) -> Form:
    forms = Forms(html).forms
    assert len(forms) == 1, html
    return forms[0]


@pytest.fixture
def hub(hub_env, admin_user, monkeypatch):
    """A hub on https://hub.example.org with one open MTurk experiment of one HIT (10 pairs + checks)."""
    monkeypatch.setenv("HUB_PUBLIC_URL", PUBLIC_URL)
    settings.get_settings.cache_clear()
    systems = make_systems(hub_env)
    with stubbed_client() as (client, stubber):
        experiment = launched(hub_env, admin_user, systems, client, stubber, prompts=10)
    with TestClient(create_app(), base_url=PUBLIC_URL) as browser:
        yield browser, experiment, systems
    settings.get_settings.cache_clear()


def task_url(experiment) -> str:
    return f"/mturk/experiments/{experiment.id}/task"


def counts(engine) -> tuple[int, int, int]:
    with Session(engine) as session:
        return tuple(
            session.exec(select(func.count()).select_from(table)).one() for table in (Rater, Assignment, Rating)
        )


def test_preview_shows_the_pairs_without_answers_and_stores_nothing(hub, hub_env):
    browser, experiment, _ = hub
    before = counts(hub_env)
    response = browser.get(
        task_url(experiment), params={"assignmentId": mturk.PREVIEW_ASSIGNMENT, "hitId": hit_id(0)}, headers=HTML
    )
    assert response.status_code == 200, response.text
    with Session(hub_env) as session:
        task = mturk.find_task_for_hit(session, session.get(Experiment, experiment.id), hit_id(0))
        items = assignments.task_items(session, task.id)
    for item in items:
        assert str(escape(item.left_text)) in response.text and str(escape(item.right_text)) in response.text
    form = only_form(response.text)
    assert form.buttons == 0 and 'id="submit-ratings"' not in response.text
    assert set(form.radios) == {f"choice_{item.id}" for item in items}
    assert all(disabled for options in form.radios.values() for _, disabled in options)
    assert counts(hub_env) == before


def test_accept_rate_submit_hands_back_to_mturk_and_the_export_hides_the_worker(hub, hub_env):
    browser, experiment, _ = hub
    params = {"assignmentId": assignment_id(1), "hitId": hit_id(0), "workerId": WORKER, "turkSubmitTo": SANDBOX_SUBMIT}
    response = browser.get(task_url(experiment), params=params, headers=HTML)
    assert response.status_code == 200, response.text
    form = only_form(response.text)
    assert form.action == task_url(experiment) and form.buttons == 1
    assert form.hidden["assignmentId"] == assignment_id(1) and form.hidden["turkSubmitTo"] == SANDBOX_SUBMIT
    assert form.radios and not any(disabled for options in form.radios.values() for _, disabled in options)
    # The worker answers: the first choice everywhere but the last pair, the last choice there.
    answers = {name: options[0][0] for name, options in form.radios.items()}
    last = sorted(answers)[-1]
    answers[last] = form.radios[last][-1][0]
    done = browser.post(form.action, data={**form.hidden, **answers, "elapsed_ms": "61000"}, headers=HTML)
    assert done.status_code == 200, done.text
    handback = only_form(done.text)
    assert handback.action == f"{SANDBOX_SUBMIT}/mturk/externalSubmit"
    assert handback.hidden["assignmentId"] == assignment_id(1)
    code = handback.hidden["completionCode"]
    assert code and code in done.text

    with Session(hub_env) as session:
        rater = session.exec(select(Rater).where(Rater.external_id == WORKER)).one()
        assignment = session.exec(select(Assignment).where(Assignment.rater_id == rater.id)).one()
        ratings = session.exec(select(Rating).where(Rating.assignment_id == assignment.id)).all()
        assert rater.backend == "mturk" and rater.public_hash and WORKER not in rater.public_hash
        assert assignment.external_assignment_id == assignment_id(1) and assignment.status == AssignmentStatus.submitted
        assert {f"choice_{r.item_id}": r.choice for r in ratings} == answers
        public_hash = rater.public_hash

    # MTurk loading the page again (a reload) shows the hand-back again, writes nothing.
    again = browser.get(task_url(experiment), params=params, headers=HTML)
    assert only_form(again.text).hidden == handback.hidden
    assert counts(hub_env)[2] == len(ratings) + _auto_ties(hub_env, experiment)

    # The public ratings download carries the salted hash and backend "mturk", never the raw worker id.
    for fmt in ("jsonl", "csv"):
        download = browser.get(f"/api/downloads/ratings.{fmt}")
        assert download.status_code == 200, download.text
        assert WORKER not in download.text
    rows = [json.loads(line) for line in browser.get("/api/downloads/ratings.jsonl").text.splitlines()[1:]]
    mine = [row for row in rows if row["assignment_id"] == assignment.id]
    assert len(mine) == len(ratings)
    assert {(row["backend"], row["rater"], row["external_assignment_id"]) for row in mine} == {
        ("mturk", public_hash, assignment_id(1))
    }

    # The periodic poll finds the assignment submitted on MTurk and approves it: the hub holds its ratings.
    with stubbed_client() as (client, stubber):
        stubber.add_response("list_assignments_for_hit", page([listed(1, 0)]), {"HITId": hit_id(0), "MaxResults": 100})
        stubber.add_response("approve_assignment", {}, {"AssignmentId": assignment_id(1)})
        assert mturk.poll_open_experiments(hub_env, client_factory=lambda: client) == 1
    with Session(hub_env) as session:
        assert session.get(Assignment, assignment.id).status == AssignmentStatus.approved


def _auto_ties(engine, experiment) -> int:
    with Session(engine) as session:
        return len(session.exec(select(Rating).where(Rating.experiment_id == experiment.id, Rating.auto_tie)).all())


def test_unknown_hits_forged_destinations_and_other_experiments_are_refused(hub, hub_env, admin_user):
    browser, experiment, systems = hub
    before = counts(hub_env)
    accepted = {"assignmentId": assignment_id(2), "workerId": WORKER, "turkSubmitTo": SANDBOX_SUBMIT}
    unknown = browser.get(task_url(experiment), params={**accepted, "hitId": "3NOSUCHHIT" + "0" * 20}, headers=HTML)
    assert unknown.status_code == 404
    assert f"HIT &#39;3NOSUCHHIT{'0' * 20}&#39; is not part of experiment #{experiment.id}" in unknown.text
    as_json = browser.get(task_url(experiment), params={**accepted, "hitId": "3NOSUCHHIT" + "0" * 20})
    assert as_json.status_code == 404 and "is not part of experiment" in as_json.json()["error"]
    # The finished page posts only to Mechanical Turk's own sites.
    forged = browser.get(
        task_url(experiment), params={**accepted, "hitId": hit_id(0), "turkSubmitTo": "https://evil.example"}
    )
    assert forged.status_code == 422 and forged.json()["field"] == "turkSubmitTo"
    # Missing MTurk parameters are named.
    missing = browser.get(task_url(experiment), params={"assignmentId": assignment_id(2), "hitId": hit_id(0)})
    assert missing.status_code == 422 and missing.json()["field"] == "workerId"
    # A hub (invite-link) experiment has no MTurk page.
    hub_only = new_experiment(hub_env, admin_user, systems, prompt_ids=experiment.prompt_ids)
    other = browser.get(task_url(hub_only), params={**accepted, "hitId": hit_id(0)})
    assert other.status_code == 404
    assert counts(hub_env)[:2] == before[:2]
