"""Malformed input gets a 4xx naming the field, never a 500, on SQLite and PostgreSQL alike: integers beyond what
the database holds (in paths, query strings, forms and JSON), NUL and other control characters and lone
surrogates in any string (PostgreSQL refuses them with an exception; SQLite used to store them), and non-finite
numbers in JSON. Nothing is stored for a refused request."""

from __future__ import annotations

import html
import json
import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from hub.models import ApiToken, Experiment, System, User
from hub.web.templating import field_label
from tests.hub.conftest import DATASET, auth, responses_file
from tests.hub.seeded_hub import PASSWORD, seeded_hub

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
HUGE = "99999999999999999999"  # > 2**64


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hub(request, tmp_path_factory):
    """One seeded hub per database for the module: (engine, tokens, system ids, app)."""
    with seeded_hub(request.param, tmp_path_factory) as seeded:
        yield seeded


@pytest.fixture
def client(hub):
    """A fresh browser (no cookies) on the module's app; no lifespan (the schema is migrated once)."""
    return TestClient(hub[3], raise_server_exceptions=False, follow_redirects=False)


def csrf(client: TestClient, path: str = "/login") -> str:
    return CSRF_FIELD.search(client.get(path, headers={"accept": "text/html"}).text).group(1)


def log_in(client: TestClient, role: str) -> None:
    data = {"csrf_token": csrf(client), "email": f"{role}@example.org", "password": PASSWORD}
    assert client.post("/login", data=data).status_code == 303


def count(engine, table) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(table)).one()


def assert_refused(response, field: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    if response.headers["content-type"].startswith("application/json"):
        body = response.json()
        named = body.get("field") if "field" in body else [".".join(map(str, e["loc"])) for e in body["detail"]]
        assert field in str(named), body
    else:  # pages name the field by its label (`system_b_id` -> "System B"), never by the internal name alone
        assert html.escape(field_label(field)) in response.text, response.text[:2000]


# ---- integers beyond 64 bits ----


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (f"/api/compare/{DATASET}?systems={HUGE}", "systems"),
        (f"/api/compare/{DATASET}?systems=1,{HUGE}", "systems"),
        (f"/compare/{DATASET}?systems={HUGE}", "systems"),
        (f"/submissions/{HUGE}", "submission_id"),
        (f"/api/submissions/{HUGE}", "submission_id"),
        (f"/api/experiments/plan?dataset={DATASET}&system_a={HUGE}&system_b=1", "system_a"),
    ],
)
def test_huge_integer_in_path_or_query(client, hub, path, field):
    _, tokens, *_ = hub
    assert_refused(client.get(path, headers=auth(tokens["admin"])), field)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (f"/admin/submissions/{HUGE}/approve", "submission_id"),
        (f"/admin/submissions/{HUGE}/reject", "submission_id"),
        (f"/admin/experiments/{HUGE}/launch", "experiment_id"),
        (f"/admin/experiments/1/invites/{HUGE}/revoke", "invite_id"),
        (f"/account/tokens/{HUGE}/revoke", "token_id"),
    ],
)
def test_huge_integer_in_admin_and_account_pages(client, path, field):
    log_in(client, "admin")
    response = client.post(path, data={"csrf_token": csrf(client, "/account")}, headers={"accept": "text/html"})
    assert_refused(response, field)


def test_browsers_get_the_error_page_naming_the_field(client):
    response = client.get(f"/submissions/{HUGE}", headers={"accept": "text/html"})
    assert response.status_code == 422 and response.headers["content-type"].startswith("text/html")
    assert "<code>Submission</code>" in response.text and "submission_id" not in response.text  # its label


def test_huge_integer_in_a_form_field(client):
    log_in(client, "admin")
    data = {"csrf_token": csrf(client, "/account"), "experiment_id": HUGE, "excluded": "true"}
    assert_refused(client.post("/admin/raters/1/exclusion", data=data), "experiment_id")


def test_huge_integer_in_submission_baselines(client, hub):
    engine, tokens, *_ = hub
    before = count(engine, System)
    files = {f"responses[{DATASET}]": ("mine.txt", responses_file(), "text/plain")}
    data = {"name": "My bot", "baselines": HUGE}
    response = client.post("/api/submissions", headers=auth(tokens["researcher"]), data=data, files=files)
    assert_refused(response, "baselines")
    assert count(engine, System) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"system_a_id": 2**70}, "system_a_id"),
        ({"submission_id": 2**70}, "submission_id"),
        ({"seed": 2**70}, "seed"),
        ({"reward_usd": float("inf")}, "reward_usd"),
    ],
)
def test_huge_or_infinite_number_in_json(client, hub, body, field):
    engine, tokens, ids, _ = hub
    form = {"dataset": DATASET, "system_a_id": ids["echo"], "system_b_id": ids["retrieval"], **body}
    content = json.dumps(form)  # allows Infinity, as many JSON encoders do
    headers = {**auth(tokens["admin"]), "content-type": "application/json"}
    assert_refused(client.post("/api/experiments", content=content, headers=headers), field)
    assert count(engine, Experiment) == 0


# ---- NUL and control characters, lone surrogates ----


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/irt/a%00b", "dataset"),
        ("/irt/a%00b", "dataset"),
        ("/api/experiments?dataset=a%00b", "dataset"),
        ("/experiments?dataset=a%00b", "dataset"),
        ("/api/leaderboards/a%00b", "dataset"),
        (f"/api/leaderboards/{DATASET}?sort=a%00b", "sort"),
        (f"/api/compare/{DATASET}?q=a%00b", "q"),
        (f"/api/datasets/{DATASET}/prompts/a%00b", "prompt_id"),
        ("/api/downloads/a%00b.csv", "filename"),
        ("/rate/a%00b", "token"),
        ("/api/rate/a%00b/claim", "token"),
        ("/api/rate/abc/claim?rater_label=a%01b", "rater_label"),
    ],
)
def test_control_character_in_path_or_query(client, path, field):
    method = client.post if "/claim" in path else client.get
    assert_refused(method(path), field)


@pytest.mark.parametrize("field", ["email", "password", "display_name"])
def test_nul_in_signup(client, hub, field):
    engine, *_ = hub
    before = count(engine, User)
    data = {"email": "new@example.org", "password": PASSWORD, "display_name": "New", field: "new\x00@example.org"}
    response = client.post("/signup", data={"csrf_token": csrf(client, "/signup"), **data})
    assert_refused(response, field)
    assert count(engine, User) == before


@pytest.mark.parametrize("field", ["email", "password"])
def test_nul_in_login(client, field):
    data = {"email": "researcher@example.org", "password": PASSWORD, field: "a\x00b"}
    assert_refused(client.post("/login", data={"csrf_token": csrf(client), **data}), field)


def test_nul_in_token_name(client, hub):
    engine, *_ = hub
    log_in(client, "researcher")
    before = count(engine, ApiToken)
    response = client.post("/account/tokens", data={"csrf_token": csrf(client, "/account"), "name": "ci\x00bot"})
    assert_refused(response, "name")
    assert count(engine, ApiToken) == before


@pytest.mark.parametrize("name", ["bad\x00bot", "bad\x07bot"])
def test_control_character_in_submission_name(client, hub, name):
    engine, tokens, *_ = hub
    before = count(engine, System)
    files = {f"responses[{DATASET}]": ("mine.txt", responses_file(), "text/plain")}
    response = client.post("/api/submissions", headers=auth(tokens["researcher"]), data={"name": name}, files=files)
    assert_refused(response, "name")
    assert count(engine, System) == before


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ('"title": "a\\u0000b"', "title"),
        ('"title": "a\\ud800b"', "title"),  # a lone surrogate: no UTF-8 encoding exists
        ('"prompt_ids": ["p1", "a\\u0000"]', "prompt_ids"),
        ('"mturk": {"a\\u0000": 1}', "mturk"),
    ],
)
def test_control_character_in_json(client, hub, content, field):
    engine, tokens, ids, _ = hub
    body = f'{{"dataset": "{DATASET}", "system_a_id": {ids["echo"]}, "system_b_id": {ids["retrieval"]}, {content}}}'
    headers = {**auth(tokens["admin"]), "content-type": "application/json"}
    assert_refused(client.post("/api/experiments", content=body, headers=headers), field)
    assert count(engine, Experiment) == 0


def test_ordinary_text_with_newlines_and_tabs_is_accepted(client, hub):
    _, tokens, *_ = hub
    files = {f"responses[{DATASET}]": ("mine.txt", responses_file(), "text/plain")}
    data = {"name": "Tab\tfree bot", "description": "line one\r\nline two\n\ttabbed"}
    response = client.post("/api/submissions", headers=auth(tokens["researcher"]), data=data, files=files)
    assert response.status_code in (201, 422), response.text
    if response.status_code == 422:  # names may refuse tabs (system-name rules); descriptions keep them
        assert response.json()["field"] == "name"


# ---- a file field sent twice ----


@pytest.mark.parametrize("field", [f"responses[{DATASET}]", f"loglik[{DATASET}]"])
def test_repeated_file_field_is_refused_by_the_api(client, hub, field):
    engine, tokens, *_ = hub
    before = count(engine, System)
    files = [
        (f"responses[{DATASET}]", ("first.txt", responses_file(), "text/plain")),
        (field, ("second.txt", responses_file(["other"] * 120) if "responses" in field else b"{}\n", "text/plain")),
    ]
    if "loglik" in field:
        files.append((field, ("third.jsonl", b"{}\n", "text/plain")))
    response = client.post("/api/submissions", headers=auth(tokens["researcher"]), data={"name": "Twice"}, files=files)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert "more than once" in response.json()["error"]
    assert count(engine, System) == before


def test_repeated_file_field_is_refused_by_the_submission_page(client, hub):
    engine, *_ = hub
    log_in(client, "researcher")
    before = count(engine, System)
    files = [
        (f"responses[{DATASET}]", ("first.txt", responses_file(), "text/plain")),
        (f"responses[{DATASET}]", ("second.txt", responses_file(["other"] * 120), "text/plain")),
    ]
    data = {"csrf_token": csrf(client, "/submit"), "name": "Twice"}
    response = client.post("/submit", data=data, files=files, headers={"accept": "text/html"})
    assert response.status_code == 422, response.text[:500]
    assert f"responses[{DATASET}]" in response.text and "more than once" in response.text
    assert count(engine, System) == before


def test_overlong_rejection_reason_is_refused(client, hub):
    _, tokens, *_ = hub
    response = client.post(
        "/api/admin/submissions/1/reject", json={"reason": "x" * 2_001}, headers=auth(tokens["admin"])
    )
    assert_refused(response, "reason")
