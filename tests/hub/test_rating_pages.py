"""The rating pages and their JSON twin over HTTP: an invite link only reaches its own study's tasks, and the split
tie (both good / both bad) is stored and published as two distinct choices that are both ties."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from markupsafe import escape

from hub.web.app import create_app
from tests.hub.conftest import auth, new_experiment

HTML = {"Accept": "text/html"}
OTHER_STUDY = "this link belongs to another study than the task submitted"


@pytest.fixture
def client(hub_env) -> Iterator[TestClient]:
    with TestClient(create_app()) as client:
        yield client


def invite(client: TestClient, admin_token: str, experiment_id: int) -> str:
    created = client.post(f"/api/experiments/{experiment_id}/invites", headers=auth(admin_token), json={})
    assert created.status_code == 201, created.text
    return created.json()["token"]


def claim(client: TestClient, token: str) -> dict:
    claimed = client.post(f"/api/rate/{token}/claim")
    assert claimed.status_code == 200, claimed.text
    return claimed.json()


def rows(engine, query: str, **params) -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(r) for r in connection.execute(sa.text(query), params)]


def written(engine) -> list[tuple]:
    """What submissions write, in plain SQL: raters' ratings, assignment states and the tasks' completed counters."""
    return [
        *rows(engine, "SELECT COUNT(*) FROM rating WHERE assignment_id IS NOT NULL"),
        *rows(engine, "SELECT status, completion_code, submitted_at FROM assignment ORDER BY id"),
        *rows(engine, "SELECT SUM(completed) FROM task"),
    ]


def test_an_invite_link_cannot_submit_another_studys_task(hub_env, people, admin_user, baselines, client):
    """Two studies X and Y, a rater of each with a task and its valid key. X's link with Y's task (and the reverse)
    is refused with 403 on the JSON and the HTML route; so is a key of the wrong task. Nothing is written."""
    x = new_experiment(hub_env, admin_user, baselines, prompt_ids=["hov1-001", "hov1-002"])
    y = new_experiment(hub_env, admin_user, baselines, prompt_ids=["hov1-003", "hov1-004"])
    token_x, token_y = invite(client, people["admin"], x.id), invite(client, people["admin"], y.id)
    task_x, task_y = claim(client, token_x), claim(client, token_y)
    assert (task_x["experiment_id"], task_y["experiment_id"]) == (x.id, y.id)
    before = written(hub_env)

    def answers(task: dict) -> dict[str, str]:
        return {str(item["id"]): "left" for item in task["items"]}

    for token, task in ((token_x, task_y), (token_y, task_x)):
        url = f"/api/rate/{token}/assignments/{task['assignment_id']}"
        refused = client.post(url, json={"key": task["key"], "choices": answers(task)})
        assert (refused.status_code, refused.json()) == (403, {"error": OTHER_STUDY, "field": None})
        form = {"assignment_id": str(task["assignment_id"]), "key": task["key"]}
        form |= {f"choice_{item_id}": choice for item_id, choice in answers(task).items()}
        page = client.post(f"/rate/{token}", data=form, headers=HTML)
        assert page.status_code == 403
        assert page.headers["content-type"].startswith("text/html")
        assert str(escape(OTHER_STUDY)) in page.text
    # A key of X's own task does not open Y's task either (checked before the study is).
    forged = client.post(
        f"/api/rate/{token_x}/assignments/{task_y['assignment_id']}",
        json={"key": task_x["key"], "choices": answers(task_y)},
    )
    assert forged.status_code == 403
    assert forged.json()["error"] == f"assignment #{task_y['assignment_id']} does not belong to this link"
    assert written(hub_env) == before
    assert before == [(0,), ("active", None, None), ("active", None, None), (0,)]

    # Each link still submits its own task.
    for token, task in ((token_x, task_x), (token_y, task_y)):
        done = client.post(
            f"/api/rate/{token}/assignments/{task['assignment_id']}",
            json={"key": task["key"], "choices": answers(task)},
        )
        assert done.status_code == 200 and done.json()["status"] == "submitted"


def test_both_good_and_both_bad_are_stored_and_published_as_distinct_ties(
    hub_env, people, admin_user, baselines, client
):
    """A split-tie study: the rater answers both good on some pairs and both bad on others (through the HTML form).
    Each rating keeps its own choice with outcome tie, in the database and in both formats of the ratings download."""
    experiment = new_experiment(hub_env, admin_user, baselines, tie_mode="split")
    token = invite(client, people["admin"], experiment.id)
    task = claim(client, token)
    assert task["choices"] == ["left", "both_good", "both_bad", "right"]
    wanted = {item["id"]: ("both_good", "both_bad")[i % 2] for i, item in enumerate(task["items"])}
    assert set(wanted.values()) == {"both_good", "both_bad"}
    form = {"assignment_id": str(task["assignment_id"]), "key": task["key"]}

    # The single-mode tie is not an answer of a split-tie study; nothing is stored.
    single = client.post(f"/rate/{token}", data={**form, **{f"choice_{i}": "tie" for i in wanted}}, headers=HTML)
    assert single.status_code == 422
    assert str(escape("choice must be one of left, both_good, both_bad, right, not 'tie'")) in single.text
    assert rows(hub_env, "SELECT COUNT(*) FROM rating WHERE assignment_id = :a", a=task["assignment_id"]) == [(0,)]

    done = client.post(f"/rate/{token}", data={**form, **{f"choice_{i}": c for i, c in wanted.items()}}, headers=HTML)
    assert done.status_code == 200, done.text
    (code,) = rows(hub_env, "SELECT completion_code FROM assignment WHERE id = :a", a=task["assignment_id"])[0]
    assert code and code in done.text
    stored = rows(
        hub_env, "SELECT item_id, choice, outcome FROM rating WHERE assignment_id = :a", a=task["assignment_id"]
    )
    assert sorted(stored) == sorted((item_id, choice, "tie") for item_id, choice in wanted.items())

    jsonl = client.get("/api/downloads/ratings.jsonl")
    assert jsonl.status_code == 200
    published = [json.loads(line) for line in jsonl.text.splitlines()[1:] if line]
    mine = {r["rating_id"]: r for r in published if r["assignment_id"] == task["assignment_id"]}
    by_id = dict(rows(hub_env, "SELECT id, choice FROM rating WHERE assignment_id = :a", a=task["assignment_id"]))
    assert {i: (r["choice"], r["outcome"]) for i, r in mine.items()} == {i: (c, "tie") for i, c in by_id.items()}
    assert {r["choice"] for r in mine.values()} == {"both_good", "both_bad"}
    table = list(csv.DictReader(io.StringIO(client.get("/api/downloads/ratings.csv").text)))
    in_csv = {
        int(r["rating_id"]): (r["choice"], r["outcome"])
        for r in table
        if r["assignment_id"] == str(task["assignment_id"])
    }
    assert in_csv == {i: (c, "tie") for i, c in by_id.items()}


def test_a_revoked_invite_link_stops_working_and_keeps_its_ratings(hub_env, people, admin_user, baselines, client):
    x = new_experiment(hub_env, admin_user, baselines, prompt_ids=["hov1-001", "hov1-002"])
    y = new_experiment(hub_env, admin_user, baselines, prompt_ids=["hov1-003"])
    created = client.post(f"/api/experiments/{x.id}/invites", headers=auth(people["admin"]), json={"label": "A"})
    invite_id, token = created.json()["id"], created.json()["token"]
    task = claim(client, token)
    choices = {str(item["id"]): "tie" for item in task["items"]}
    submitted = client.post(
        f"/api/rate/{token}/assignments/{task['assignment_id']}", json={"key": task["key"], "choices": choices}
    )
    assert submitted.status_code == 200, submitted.text
    revoke = f"/api/experiments/{x.id}/invites/{invite_id}/revoke"
    assert client.post(revoke, headers=auth(people["owner"])).status_code == 403
    wrong = client.post(f"/api/experiments/{y.id}/invites/{invite_id}/revoke", headers=auth(people["admin"]))
    assert wrong.status_code == 404 and f"no invite #{invite_id} in experiment #{y.id}" in wrong.json()["error"]
    assert client.post(revoke, headers=auth(people["admin"])).json()["revoked_at"]
    gone = client.post(f"/api/rate/{token}/claim")
    assert gone.status_code == 404 and "revoked by the organisers" in gone.json()["error"]
    assert client.get(f"/rate/{token}", headers=HTML).status_code == 404
    assert rows(hub_env, "SELECT COUNT(*) FROM rating WHERE assignment_id IS NOT NULL") == [(len(choices),)]
