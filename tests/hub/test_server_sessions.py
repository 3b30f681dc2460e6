"""Server-side sessions: a session cookie captured before logout, a password change or an admin disabling the user
(or left idle too long) no longer logs anyone in; the user's API tokens stop working when the user is disabled."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import BrowserSession
from hub.models.common import utcnow
from hub.web.app import create_app
from tests.hub.conftest import auth

PASSWORD = "correct horse battery"  # the `people` fixture's
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def app(hub_env):
    return create_app()


def browser(app) -> TestClient:
    return TestClient(app, headers={"accept": "text/html"}, follow_redirects=False)


def csrf(client: TestClient, path: str) -> str:
    return CSRF_FIELD.search(client.get(path, follow_redirects=True).text).group(1)


def logged_in(app, role: str = "owner") -> TestClient:
    client = browser(app)
    response = client.post(
        "/login", data={"csrf_token": csrf(client, "/login"), "email": f"{role}@example.org", "password": PASSWORD}
    )
    assert response.status_code == 303, response.text
    assert client.get("/account").status_code == 200
    return client


def replay(app, cookie: str) -> int:
    """GET /account with nothing but a captured session cookie: 200 if it still logs someone in, else 303 (login)."""
    with browser(app) as thief:
        thief.cookies.set("session", cookie)
        return thief.get("/account").status_code


def test_a_cookie_captured_before_logout_is_refused_after_it(app, people):
    client = logged_in(app)
    captured = client.cookies["session"]
    assert replay(app, captured) == 200
    response = client.post("/logout", data={"csrf_token": csrf(client, "/account")})
    assert response.status_code == 303
    assert replay(app, captured) == 303
    assert client.get("/account").status_code == 303


def test_a_password_change_ends_every_other_session_and_keeps_this_one(app, people):
    here, elsewhere = logged_in(app), logged_in(app)
    captured = elsewhere.cookies["session"]
    form = {"csrf_token": csrf(here, "/account"), "current_password": "wrong password!", "new_password": "x" * 12}
    refused = here.post("/account/password", data=form)
    assert refused.status_code == 401
    assert replay(app, captured) == 200
    form |= {"current_password": PASSWORD, "new_password": "a brand new passphrase"}
    changed = here.post("/account/password", data=form)
    assert changed.status_code == 303, changed.text
    assert replay(app, captured) == 303
    assert elsewhere.get("/account").status_code == 303
    assert here.get("/account").status_code == 200  # the session that changed it stays logged in
    with browser(app) as fresh:  # and the new password is the one that works
        login = {"csrf_token": csrf(fresh, "/login"), "email": "owner@example.org", "password": PASSWORD}
        assert fresh.post("/login", data=login).status_code == 401
        login["password"] = "a brand new passphrase"
        assert fresh.post("/login", data=login).status_code == 303


def test_disabling_a_user_ends_their_sessions_and_tokens_and_is_audited(app, people):
    client = logged_in(app)
    captured = client.cookies["session"]
    with TestClient(app) as api:
        me = api.get("/api/admin/users", headers=auth(people["admin"])).json()
        owner_id = next(u["id"] for u in me["users"] if u["email"] == "owner@example.org")
        forbidden = api.post(f"/api/admin/users/{owner_id}/disable", headers=auth(people["other"]))
        assert forbidden.status_code == 403
        disabled = api.post(f"/api/admin/users/{owner_id}/disable", headers=auth(people["admin"]))
        assert disabled.status_code == 200, disabled.text
        assert disabled.json()["disabled"] is True
        assert replay(app, captured) == 303
        refused = api.get("/api/submissions/1", headers=auth(people["owner"]))
        assert refused.status_code == 403 and "disabled" in refused.json()["error"]
        with browser(app) as again:  # the right password no longer logs in either
            login = {"csrf_token": csrf(again, "/login"), "email": "owner@example.org", "password": PASSWORD}
            page = again.post("/login", data=login)
            assert page.status_code == 403 and "disabled" in page.text
        audit = api.get("/api/admin/audit", headers=auth(people["admin"])).json()
        assert any(e["action"] == "disable_user" and e["detail"]["user"] == owner_id for e in audit)
        enabled = api.post(f"/api/admin/users/{owner_id}/enable", headers=auth(people["admin"]))
        assert enabled.json()["disabled"] is False
        assert api.get("/api/submissions/1", headers=auth(people["owner"])).status_code == 404  # a user again
        assert replay(app, captured) == 303  # old sessions stay ended


def test_an_idle_session_expires_and_an_old_one_expires_whatever_its_use(app, people, hub_env):
    idle, old = logged_in(app), logged_in(app)
    with Session(hub_env) as session:
        rows = session.exec(select(BrowserSession).order_by(BrowserSession.id)).all()
        assert len(rows) == 2
        idle_id = rows[0].id
        rows[0].last_seen_at = utcnow() - timedelta(hours=3)
        rows[1].created_at = utcnow() - timedelta(days=15)
        session.add_all(rows)
        session.commit()
    assert idle.get("/account").status_code == 303
    assert old.get("/account").status_code == 303
    logged_in(app)  # a new login clears the user's sessions past the absolute limit from the table
    with Session(hub_env) as session:
        left = session.exec(select(BrowserSession).order_by(BrowserSession.id)).all()
        assert left[0].id == idle_id and len(left) == 2
        assert all(utcnow() - row.created_at < timedelta(days=1) for row in left)


def test_the_cookie_carries_a_random_id_and_the_database_only_its_hash(app, people, hub_env):
    client = logged_in(app)
    with hub_env.connect() as connection:
        stored = connection.execute(sa.text("SELECT id_sha256, user_id FROM browsersession")).all()
    assert len(stored) == 1 and len(stored[0][0]) == 64
    assert stored[0][0] not in client.cookies["session"]


def test_csrf_still_guards_forms_and_the_session_api(app, people):
    client = logged_in(app)
    assert client.post("/logout", data={"csrf_token": "forged"}).status_code == 403
    assert client.get("/account").status_code == 200
    refused = client.post("/api/submissions", headers={"accept": "application/json"})
    assert refused.status_code == 403


def test_the_command_line_disables_and_enables_a_user_with_an_audit_entry(app, people, hub_env, run_cli):
    client = logged_in(app)
    captured = client.cookies["session"]
    result = run_cli("admin", "disable-user", "Owner@Example.org")
    assert result.exit_code == 0, result.stderr
    assert "disabled owner@example.org" in result.stdout
    assert replay(app, captured) == 303
    assert run_cli("admin", "disable-user", "nobody@example.org").exit_code == 3
    assert run_cli("admin", "disable-user", "owner@example.org", "--enable").exit_code == 0
    with hub_env.connect() as connection:
        actions = connection.execute(sa.text("SELECT action, actor_id FROM auditentry ORDER BY id")).all()
    assert [tuple(a) for a in actions][-2:] == [("disable_user", None), ("enable_user", None)]
