"""Raters give a short free-text reason with each judgement when the experiment asks (off, optional, required):
the rating page shows the box, the HTML and JSON submit paths store each reason with its rating in the same
transaction, bad reasons (too long, NUL or control characters, a forged item, missing when required, sent when
off) are refused naming the field with nothing stored, and the reasons stay out of every public view."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import Rating, RatingReason
from hub.services.human.rating_reasons import MAX_REASON_CHARS
from hub.web.app import create_app
from tests.hub.conftest import auth, new_experiment

HTML = {"Accept": "text/html"}
PROMPTS = ["hov1-001", "hov1-002", "hov1-003"]
PRIVATE = "PRIVATE-REASON-7f3a because reply one answers the question"


@pytest.fixture
def client(hub_env):
    with TestClient(create_app()) as client:
        yield client


def _claim(client, admin_token: str, experiment_id: int) -> tuple[str, dict]:
    created = client.post(f"/api/experiments/{experiment_id}/invites", headers=auth(admin_token), json={})
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    claimed = client.post(f"/api/rate/{token}/claim")
    assert claimed.status_code == 200, claimed.text
    return token, claimed.json()


def _form(task: dict, reasons: dict[int, str]) -> dict[str, str]:
    form = {"assignment_id": str(task["assignment_id"]), "key": task["key"]}
    form |= {f"choice_{item['id']}": "left" for item in task["items"]}
    form |= {f"reason_{item_id}": text for item_id, text in reasons.items()}
    return form


def _stored(engine) -> tuple[int, int]:
    with engine.connect() as connection:
        ratings = connection.execute(sa.text("SELECT COUNT(*) FROM rating WHERE assignment_id IS NOT NULL")).scalar()
        reasons = connection.execute(sa.text("SELECT COUNT(*) FROM ratingreason")).scalar()
    return int(ratings or 0), int(reasons or 0)


def test_the_rating_page_asks_for_required_reasons_and_stores_them_with_the_ratings(
    hub_env, people, admin_user, baselines, client
):
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="required")
    token, task = _claim(client, people["admin"], experiment.id)
    assert task["reasons"] == "required"
    page = client.get(f"/rate/{token}", headers=HTML)
    ids = [item["id"] for item in task["items"]]
    for item_id in ids:
        assert f'name="reason_{item_id}"' in page.text
    assert f'maxlength="{MAX_REASON_CHARS}"' in page.text and "required" in page.text

    texts = {item_id: f"  {PRIVATE} #{n}\n" for n, item_id in enumerate(ids)}
    done = client.post(f"/rate/{token}", data=_form(task, texts), headers=HTML)
    assert done.status_code == 200, done.text
    with Session(hub_env) as session:
        ratings = {r.item_id: r for r in session.exec(select(Rating).where(Rating.assignment_id.is_not(None)))}
        reasons = {r.item_id: r for r in session.exec(select(RatingReason))}
    assert set(reasons) == set(ratings) == set(ids)
    for item_id, reason in reasons.items():
        assert reason.text == texts[item_id].strip()  # trimmed, otherwise as typed
        assert (reason.assignment_id, reason.rater_id) == (ratings[item_id].assignment_id, ratings[item_id].rater_id)


def test_optional_reasons_may_be_left_out_and_a_study_without_reasons_shows_no_box(
    hub_env, people, admin_user, baselines, client
):
    optional = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="optional")
    token, task = _claim(client, people["admin"], optional.id)
    first = task["items"][0]["id"]
    answered = client.post(
        f"/api/rate/{token}/assignments/{task['assignment_id']}",
        json={"key": task["key"], "choices": {str(i["id"]): "tie" for i in task["items"]}, "reasons": {first: "ok"}},
    )
    assert answered.status_code == 200, answered.text
    with Session(hub_env) as session:
        assert [(r.item_id, r.text) for r in session.exec(select(RatingReason))] == [(first, "ok")]

    plain = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS)
    token, task = _claim(client, people["admin"], plain.id)
    assert "reason_" not in client.get(f"/rate/{token}", headers=HTML).text
    before = _stored(hub_env)
    refused = client.post(f"/rate/{token}", data=_form(task, {task["items"][0]["id"]: "why not"}), headers=HTML)
    assert refused.status_code == 422 and "this study asks for no reasons" in refused.text
    assert _stored(hub_env) == before


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("x" * (MAX_REASON_CHARS + 1), f"at most {MAX_REASON_CHARS} characters"),
        ("fine\x00but NUL", "control character U+0000"),
        ("a bell \x07 here", "control character U+0007"),
        ("   ", "without a reason"),  # only blanks: missing
    ],
)
def test_bad_reasons_are_refused_naming_the_field_and_nothing_is_stored(
    hub_env, people, admin_user, baselines, client, reason, message
):
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="required")
    token, task = _claim(client, people["admin"], experiment.id)
    ids = [item["id"] for item in task["items"]]
    texts = {item_id: "because it is clearer" for item_id in ids} | {ids[1]: reason}
    before = _stored(hub_env)
    page = client.post(f"/rate/{token}", data=_form(task, texts), headers=HTML)
    assert page.status_code == 422 and message in page.text
    api = client.post(
        f"/api/rate/{token}/assignments/{task['assignment_id']}",
        json={"key": task["key"], "choices": {str(i): "left" for i in ids}, "reasons": texts},
    )
    assert api.status_code == 422, api.text
    # the JSON body's own checks may refuse a NUL first (field reasons.ID); otherwise the reason checks (reason_ID)
    assert api.json()["field"] in (f"reason_{ids[1]}", f"reasons.{ids[1]}"), api.json()
    assert api.json()["field"] == "reasons." + str(ids[1]) or message in api.json()["error"]
    assert _stored(hub_env) == before


def test_a_reason_for_an_item_of_another_task_is_refused(hub_env, people, admin_user, baselines, client):
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="optional")
    token, task = _claim(client, people["admin"], experiment.id)
    forged = client.post(
        f"/rate/{token}",
        data=_form(task, {"999999": "sneaky"} | {"12x": "bad"}),
        headers=HTML,  # type: ignore[operator]
    )
    assert forged.status_code == 422 and "reason_12x" in forged.text
    forged = client.post(f"/rate/{token}", data=_form(task, {999999: "sneaky"}), headers=HTML)
    assert forged.status_code == 422 and "item 999999 is not part of this task" in forged.text
    assert _stored(hub_env) == (0, 0)


def test_reasons_stay_out_of_public_views_and_only_admins_read_them(hub_env, people, admin_user, baselines, client):
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=PROMPTS, reasons="required")
    token, task = _claim(client, people["admin"], experiment.id)
    texts = {item["id"]: PRIVATE for item in task["items"]}
    assert client.post(f"/rate/{token}", data=_form(task, texts), headers=HTML).status_code == 200
    for url in (
        "/api/downloads/ratings.jsonl",
        "/api/downloads/ratings.csv",
        f"/api/experiments/{experiment.id}",
        f"/experiments/{experiment.id}",
    ):
        response = client.get(url)
        assert PRIVATE not in response.text, url
    qa = f"/api/admin/experiments/{experiment.id}/qa"
    assert client.get(qa, headers=auth(people["owner"])).status_code == 403
    assert client.get(qa).status_code in (401, 403)
    assert PRIVATE in client.get(qa, headers=auth(people["admin"])).text
    graded = client.post(f"{qa}/grades", headers=auth(people["owner"]), json={"reason_id": 1, "status": "PASSED"})
    assert graded.status_code == 403
