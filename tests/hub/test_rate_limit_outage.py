"""The rate limiter's store (Redis) is down: no request answers 500. Token use and rater claims go on uncounted (a
warning, counted); login and sign-up, whose limits are what stops password guessing, answer 503 with Retry-After."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from hub import settings
from hub.services.accounts import rate_limits
from tests.hub.conftest import auth, new_experiment
from tests.hub.test_queue_outage import free_port
from tests.hub.test_rate_limits import CSRF_FIELD, PASSWORD, browser, log_in


@pytest.fixture
def app(hub_env, monkeypatch):
    """The hub with its rate limits counted in a Redis where nothing listens."""
    monkeypatch.setenv("HUB_RATE_LIMIT_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.setenv("HUB_NEW_RATERS_PER_CLIENT", "1000/minute")
    settings.get_settings.cache_clear()
    rate_limits._limiter.cache_clear()
    from hub.web.app import create_app

    yield create_app()
    rate_limits._limiter.cache_clear()


def test_api_tokens_and_rater_claims_are_served_uncounted(app, hub_env, people, admin_user, baselines):
    skipped = rate_limits.unavailable_counts()
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/api/overview", headers=auth(people["owner"])).status_code == 200
        assert client.get("/api/overview", headers=auth("ceh_" + "x" * 40)).status_code == 401  # unknown token
        experiment = new_experiment(hub_env, admin_user, baselines)
        invite = client.post(
            f"/api/experiments/{experiment.id}/invites", headers=auth(people["admin"]), json={"cohort": True}
        )
        assert invite.status_code == 201, invite.text
        claim = client.post(f"/api/rate/{invite.json()['token']}/claim", params={"rater_label": "r1"})
        assert claim.status_code == 200, claim.text
    after = rate_limits.unavailable_counts()
    assert after[rate_limits.TOKEN_CLIENT.name] > skipped[rate_limits.TOKEN_CLIENT.name]
    assert after[rate_limits.RATER_CLIENT.name] > skipped[rate_limits.RATER_CLIENT.name]


def test_login_and_sign_up_answer_503_with_retry_after(app, people):
    with browser(app) as client:
        answers = [log_in(client, PASSWORD), log_in(client, "wrong password!")]
        token = CSRF_FIELD.search(client.get("/signup").text).group(1)
        form = {"csrf_token": token, "email": "new@example.org", "display_name": "n", "password": "p" * 12}
        answers.append(client.post("/signup", data=form))
        assert client.get("/account").status_code == 303  # not logged in
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert int(answer.headers["retry-after"]) > 0


def test_no_500_from_many_requests_while_the_store_is_down(app, people):
    with TestClient(app, raise_server_exceptions=False) as client, ThreadPoolExecutor(4) as pool:
        statuses = set(
            pool.map(lambda n: client.get("/api/overview", headers=auth(people["owner"])).status_code, range(12))
        )
    assert statuses == {200}
