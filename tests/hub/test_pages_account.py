"""Account, submission and admin pages in a browser's shoes: sessions, CSRF, forms, escaping, the review flow."""

from __future__ import annotations

import html
import re
import time

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from hub.models import Submission, SubmissionStatus, System
from hub.settings import get_settings
from hub.web.app import create_app
from hub.web.csrf import MESSAGE
from hub.web.routes import pages_account, pages_admin
from hub.web.templating import templates
from tests.hub.conftest import DATASET, post, responses_file

PASSWORD = "correct horse battery"  # the `people` fixture's
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def browser(app) -> TestClient:
    return TestClient(app, headers={"accept": "text/html"}, follow_redirects=False)


@pytest.fixture
def app(hub_env):
    return create_app()


@pytest.fixture
def client(app):
    with browser(app) as client:
        yield client


def csrf(client: TestClient, path: str = "/login") -> str:
    page = client.get(path, follow_redirects=True)
    return CSRF_FIELD.search(page.text).group(1)


def form(client: TestClient, path: str, data: dict | None = None, token_from: str = "/login", **kwargs):
    return client.post(path, data={"csrf_token": csrf(client, token_from), **(data or {})}, **kwargs)


def log_in(client: TestClient, role: str) -> None:
    response = form(client, "/login", {"email": f"{role}@example.org", "password": PASSWORD})
    assert response.status_code == 303, response.text


def submit(client: TestClient, name="My bot", content=None, filename="mine.txt", **fields):
    files = {f"responses[{DATASET}]": (filename, content if content is not None else responses_file(), "text/plain")}
    return form(client, "/submit", {"name": name, **fields}, token_from="/submit", files=files)


def submission_id(response) -> int:
    assert response.status_code == 303, response.text
    return int(re.fullmatch(r"/submissions/(\d+)", response.headers["location"]).group(1))


def count(engine, table) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(table)).one()


# ---- signing up, logging in and out ----


def test_signup_logs_in_and_shows_the_account(client):
    response = form(
        client, "/signup", {"email": "New@Example.org", "display_name": "Ada", "password": "long enough pw"}
    )
    assert (response.status_code, response.headers["location"]) == (303, "/account")
    account = client.get("/account")
    assert account.status_code == 200
    assert "Ada" in account.text and "new@example.org" in account.text
    assert 'action="/logout"' in account.text  # the navigation knows the viewer


def test_signup_error_keeps_the_email_but_never_the_password(client, people):
    response = form(client, "/signup", {"email": "owner@example.org", "display_name": "X", "password": "secret-pw-123"})
    assert response.status_code == 409
    assert "an account with this email already exists" in response.text
    assert 'value="owner@example.org"' in response.text and "secret-pw-123" not in response.text
    short = form(client, "/signup", {"email": "a@example.org", "display_name": "A", "password": "short"})
    assert short.status_code == 400 and "the password must be 10 to 1024 characters long" in short.text


@pytest.mark.parametrize("email", ["owner@example.org", "nobody@example.org"])
def test_failed_login_says_the_same_for_unknown_email_and_wrong_password(client, people, email):
    response = form(client, "/login", {"email": email, "password": "wrong password!"})
    assert response.status_code == 401
    assert "wrong email or password" in response.text
    assert f'value="{email}"' in response.text and "wrong password!" not in response.text
    assert client.get("/account").status_code == 303  # still anonymous


def test_login_rotates_the_session_and_follows_only_local_next(client, people):
    before = csrf(client)
    response = form(client, "/login", {"email": "owner@example.org", "password": PASSWORD, "next": "/submit"})
    assert response.headers["location"] == "/submit"
    assert csrf(client, "/account") != before  # nothing of the anonymous session survives the login
    client.cookies.clear()
    evil = form(client, "/login", {"email": "owner@example.org", "password": PASSWORD, "next": "//evil.example/"})
    assert evil.headers["location"] == "/account"


def test_logout_ends_the_session(client, people):
    log_in(client, "owner")
    assert client.get("/account").status_code == 200
    response = form(client, "/logout", token_from="/account")
    assert (response.status_code, response.headers["location"]) == (303, "/")
    assert client.get("/account").headers["location"] == "/login?next=%2Faccount"


# ---- CSRF ----


def _post_routes() -> list[str]:
    paths = []
    for router in (pages_account.router, pages_admin.router):
        paths += [r.path.format(token_id=1, submission_id=1) for r in router.routes if "POST" in r.methods]
    return paths


@pytest.mark.parametrize("path", _post_routes())
def test_every_form_without_a_valid_token_is_refused(app, people, path):
    with browser(app) as stranger, browser(app) as admin:
        foreign_token = csrf(stranger)
        log_in(admin, "admin")
        data = {"email": "admin@example.org", "password": PASSWORD, "reason": "r", "name": "n"}
        for sent in ({}, {"csrf_token": ""}, {"csrf_token": foreign_token}, {"csrf_token": "é" * 43}):
            response = admin.post(path, data={**data, **sent})
            assert response.status_code == 403, (path, sent)
            assert html.escape(MESSAGE) in response.text
        assert admin.get("/account").status_code == 200  # not logged out by a forged /logout


def test_api_with_a_bearer_token_needs_no_csrf_token(client, people, hub_env):
    log_in(client, "owner")  # even with a session cookie present, the token is what counts
    response = post(client, people["owner"])
    assert response.status_code == 201, response.text


def test_api_through_the_browser_session_needs_the_csrf_header(client, people):
    log_in(client, "owner")
    assert post(client, None).status_code == 403
    token = csrf(client, "/account")
    files = {f"responses[{DATASET}]": ("mine.txt", responses_file(), "text/plain")}
    sent = client.post("/api/submissions", data={"name": "b"}, files=files, headers={"x-csrf-token": token})
    assert sent.status_code == 201, sent.text


# ---- API tokens ----


def test_token_plaintext_is_shown_once_and_works_until_revoked(client, people):
    log_in(client, "owner")
    created = form(client, "/account/tokens", {"name": "laptop"}, token_from="/account")
    assert created.status_code == 200 and created.headers["cache-control"] == "no-store"
    plaintext = re.search(r"(ceh_[A-Za-z0-9_-]{43})", created.text).group(1)
    assert plaintext not in client.get("/account").text
    api = TestClient(client.app)
    assert post(api, plaintext).status_code == 201
    rows = re.findall(r'action="/account/tokens/(\d+)/revoke"', created.text)
    assert len(rows) == 2  # the fixture's "cli" token and this one
    revoked = form(client, f"/account/tokens/{rows[-1]}/revoke", token_from="/account")
    assert (revoked.status_code, revoked.headers["location"]) == (303, "/account")
    response = post(api, plaintext, content=responses_file(["x"] * 120))
    assert response.status_code == 401 and response.json()["error"] == "invalid or revoked API token"
    assert client.get("/account").text.count('/revoke"') == 1


def test_revoking_another_users_token_is_404(client, people):
    log_in(client, "other")
    response = form(client, "/account/tokens/1/revoke", token_from="/account")  # token 1 is the owner's
    assert response.status_code == 404 and "no such API token" in response.text


# ---- submitting and following ----


def test_submit_form_redirects_to_the_status_page(client, people):
    log_in(client, "owner")
    files = {
        f"responses[{DATASET}]": ("mine.txt", responses_file(), "text/plain"),
        f"loglik[{DATASET}]": ("", b"", "application/octet-stream"),  # a file input left empty, as browsers send it
    }
    data = {"name": "Form bot", "description": "seq2seq", "paper_url": "https://example.org/p", "is_public": "on"}
    sid = submission_id(form(client, "/submit", data, token_from="/submit", files=files))
    page = client.get(f"/submissions/{sid}")
    assert page.status_code == 200
    assert "Form bot" in page.text and "submitted" in page.text and f'href="/api/submissions/{sid}"' in page.text
    assert 'http-equiv="refresh"' not in page.text  # waiting for a person, not for the worker
    assert f'href="/submissions/{sid}"' in client.get("/account").text
    assert client.get(f"/api/submissions/{sid}").json()["system"]["is_public"] is True


def test_bad_file_is_refused_with_the_toolkits_message_and_nothing_is_stored(client, people, hub_env):
    log_in(client, "owner")
    response = submit(client, name="Kept name", content=responses_file(["only one line"]), filename="short.txt")
    assert response.status_code == 422
    assert f"short.txt: expected 120 lines (one response per prompt of dataset {DATASET}), found 1" in response.text
    assert f"responses[{DATASET}]" in response.text and 'value="Kept name"' in response.text
    assert count(hub_env, Submission) == 0 and count(hub_env, System) == 0
    files = get_settings().data_dir / "files"
    assert not files.exists() or not [p for p in files.rglob("*") if p.is_file()]


def test_submit_without_any_file_says_so(client, people):
    log_in(client, "owner")
    response = form(client, "/submit", {"name": "x"}, token_from="/submit")
    assert response.status_code == 400 and "upload at least one response file" in response.text


def test_hidden_or_missing_submission_is_a_404_page(client, people):
    [created] = post(client, people["owner"]).json()
    for path in (f"/submissions/{created['id']}", "/submissions/999"):
        response = client.get(path)
        assert response.status_code == 404 and "no submission #" in response.text
    log_in(client, "other")
    assert client.get(f"/submissions/{created['id']}").status_code == 404


def test_names_descriptions_and_responses_are_escaped(client, people):
    log_in(client, "owner")
    lines = [f"line {i}" for i in range(120)]
    lines[0] = "<b onmouseover=alert(3)>response</b>"
    sid = submission_id(
        submit(
            client,
            name="<script>alert(1)</script>",
            description="<img src=x onerror=alert(2)>",
            content=responses_file(lines),
        )
    )
    log_in(client, "admin")
    for path in (f"/submissions/{sid}", "/admin/queue"):
        text = client.get(path).text
        assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert "<img src=x" not in text and "&lt;img src=x onerror=alert(2)&gt;" in text
    assert "&lt;b onmouseover=alert(3)&gt;response&lt;/b&gt;" in client.get("/admin/queue").text


# ---- admin ----


def wait_for_page_status(client, sid, wanted, timeout=60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = client.get(f"/submissions/{sid}")
        if f"acct-status-{wanted}" in page.text:
            return page.text
        time.sleep(0.2)
    raise AssertionError(f"submission {sid} never became {wanted}: {page.text}")


def test_admin_approves_through_the_form_and_the_evaluation_runs(hub_env, people):
    with browser(create_app(embedded_worker=True)) as client:
        log_in(client, "owner")
        sid = submission_id(submit(client, name="Approved bot", is_public="on"))
        log_in(client, "admin")
        queue = client.get("/admin/queue").text
        assert f'action="/admin/submissions/{sid}/approve"' in queue and "owner@example.org" in queue
        approved = form(client, f"/admin/submissions/{sid}/approve", token_from="/admin/queue")
        assert (approved.status_code, approved.headers["location"]) == (303, "/admin/queue")
        page = wait_for_page_status(client, sid, "evaluated")
        assert "bleu-2|v1|" in page and 'http-equiv="refresh"' not in page
        rerunnable = client.get("/admin/queue").text
        assert f'action="/admin/submissions/{sid}/rerun"' in rerunnable
        rerun = form(client, f"/admin/submissions/{sid}/rerun", token_from="/admin/queue")
        assert rerun.headers["location"] == f"/submissions/{sid}"
        wait_for_page_status(client, sid, "evaluated")
        audit = client.get("/admin/audit").text
        assert audit.count("<td>admin@example.org</td>") == 2 and ">approve<" in audit and ">rerun<" in audit


def test_rejection_reason_reaches_the_owner_and_the_audit_log(app, people):
    with browser(app) as owner, browser(app) as admin:
        log_in(owner, "owner")
        sid = submission_id(submit(owner))
        log_in(admin, "admin")
        empty = form(admin, f"/admin/submissions/{sid}/reject", {"reason": "  "}, token_from="/admin/queue")
        assert empty.status_code == 400 and "give the researcher a reason" in empty.text
        rejected = form(admin, f"/admin/submissions/{sid}/reject", {"reason": "copies <the> refs"}, "/admin/queue")
        assert rejected.status_code == 303
        page = owner.get(f"/submissions/{sid}").text
        assert "acct-status-rejected" in page and "copies &lt;the&gt; refs" in page
        again = form(admin, f"/admin/submissions/{sid}/approve", token_from="/admin/queue")
        assert again.status_code == 409 and "not waiting for review" in again.text
        audit = admin.get("/admin/audit").text
        assert ">reject<" in audit and f"submission #{sid}" in audit and "copies &lt;the&gt; refs" in audit


def test_researchers_get_403_on_admin_pages(client, people, hub_env):
    [created] = post(client, people["owner"]).json()
    log_in(client, "owner")
    for path in ("/admin/queue", "/admin/audit"):
        response = client.get(path)
        assert response.status_code == 403 and "only admins" in response.text
    response = form(client, f"/admin/submissions/{created['id']}/approve", token_from="/account")
    assert response.status_code == 403
    with Session(hub_env) as session:
        assert session.get(Submission, created["id"]).status == SubmissionStatus.submitted


@pytest.mark.parametrize("path", ["/account", "/submit", "/admin/queue", "/admin/audit"])
def test_anonymous_visitors_are_sent_to_login(client, path):
    response = client.get(path)
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
    assert client.get(response.headers["location"]).status_code == 200


def test_navigation_shows_the_viewer_and_works_without_one(client, people):
    assert 'href="/login"' in templates.get_template("_nav_account.html").render(request=None)
    log_in(client, "admin")
    page = client.get("/account").text
    assert 'href="/admin/queue"' in page and 'href="/submit"' in page and 'href="/login"' not in page
    log_in(client, "owner")
    assert 'href="/admin/queue"' not in client.get("/account").text
