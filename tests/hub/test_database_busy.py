"""A database that is busy (no pooled connection within the timeout) or restarting answers 503 with Retry-After and
a message saying to try again, as JSON for the API and as the error page for browsers, never an anonymous 500."""

from __future__ import annotations

import pytest
import sqlalchemy.exc
from fastapi.testclient import TestClient

from hub.services.publishing import leaderboard
from hub.web.app import create_app

FAILURES = [
    sqlalchemy.exc.TimeoutError("QueuePool limit of size 10 overflow 10 reached, connection timed out, timeout 30"),
    sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception("server closed the connection unexpectedly")),
]


@pytest.mark.parametrize("failure", FAILURES, ids=["pool-timeout", "connection-lost"])
def test_a_busy_or_restarting_database_answers_503_with_retry_after(hub_env, monkeypatch, failure):
    def busy(*_args, **_kwargs):
        raise failure

    monkeypatch.setattr(leaderboard, "overview", busy)
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        api = client.get("/api/overview")
        assert api.status_code == 503 and api.headers["retry-after"] == "2"
        assert api.json() == {"error": "the hub's database is busy or restarting; try again in a moment", "field": None}
        page = client.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 503 and "try again in a moment" in page.text
        assert "QueuePool" not in page.text and "server closed" not in page.text  # no internals shown


def test_other_operational_errors_stay_errors(hub_env, monkeypatch):
    """A missing table is a bug, not a busy database: 500, not an invitation to retry."""

    def broken(*_args, **_kwargs):
        raise sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception("no such table: experiment"))

    monkeypatch.setattr(leaderboard, "overview", broken)
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        response = client.get("/api/overview")
        assert response.status_code == 500 and "retry-after" not in response.headers
