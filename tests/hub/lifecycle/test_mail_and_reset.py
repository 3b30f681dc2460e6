"""Item 4: e-mail through a real SMTP server (aiosmtpd), sent by the job, and password reset by e-mail."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlmodel import Session, select

from hub import db
from hub.models import OutgoingMail, PasswordReset
from hub.services.notifications import mail
from tests.hub.conftest import auth, post

HTML = {"accept": "text/html"}


def csrf(client, path: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, headers=HTML).text).group(1)


def ask_reset(client, email: str):
    return client.post(
        "/forgot-password", data={"email": email, "csrf_token": csrf(client, "/forgot-password")}, headers=HTML
    )


def test_a_rejection_is_mailed_with_its_reason_by_the_job_not_the_request(client, people, smtp):
    [created] = post(client, people["owner"]).json()
    client.post(
        f"/api/admin/submissions/{created['id']}/reject", json={"reason": "wrong file"}, headers=auth(people["admin"])
    )
    assert smtp.messages == []  # nothing is sent inside a request
    assert mail.send_pending(db.get_engine()) >= 2
    to_owner = [m for m in smtp.messages if m["To"] == "owner@example.org"]
    assert [m["Subject"] for m in to_owner] == [
        f"Submission #{created['id']} (My bot): Waiting for review",
        f"Submission #{created['id']} (My bot): Rejected",
    ]
    assert "Reason: wrong file" in to_owner[1].get_content()
    assert f"/submissions/{created['id']}" in to_owner[1].get_content()
    assert any(m["To"] == "admin@example.org" and "awaits review" in m["Subject"] for m in smtp.messages)
    with Session(db.get_engine()) as session:
        rows = session.exec(select(OutgoingMail)).all()
    assert {r.state for r in rows} == {"sent"} and {r.body for r in rows} == {""}
    assert mail.send_pending(db.get_engine()) == 0  # each mail once


def test_an_unreachable_smtp_server_leaves_the_mail_queued_and_counted(client, people, smtp, monkeypatch):
    from hub import settings

    post(client, people["owner"])
    monkeypatch.setenv("HUB_SMTP_PORT", "1")  # nothing listens there
    settings.get_settings.cache_clear()
    assert mail.send_pending(db.get_engine()) == 0
    with Session(db.get_engine()) as session:
        rows = session.exec(select(OutgoingMail)).all()
    assert {r.state for r in rows} == {"pending"} and {r.attempts for r in rows} == {1}
    assert all(r.last_error and "127.0.0.1" not in r.last_error for r in rows)


def test_password_reset_link_works_once_and_unknown_addresses_get_the_same_answer(client, people, smtp):
    known, unknown = ask_reset(client, "Owner@example.org"), ask_reset(client, "nobody@example.org")
    assert known.status_code == unknown.status_code == 200
    assert known.text == unknown.text and "a reset link is on its way" in known.text  # no account is revealed
    assert mail.send_pending(db.get_engine()) == 1
    [message] = smtp.messages
    assert message["To"] == "owner@example.org"
    link = re.search(r"http://\S+/reset-password\?token=(\S+)", message.get_content())
    token = link.group(1)
    with Session(db.get_engine()) as session:
        stored = session.exec(select(PasswordReset)).one()
        assert token not in stored.token_sha256 and len(stored.token_sha256) == 64
        assert {m.state for m in session.exec(select(OutgoingMail))} == {"sent", "dropped"}
        assert all(token not in m.body for m in session.exec(select(OutgoingMail)))

    form = client.get(f"/reset-password?token={token}", headers=HTML)
    assert form.status_code == 200 and 'name="new_password"' in form.text
    assert form.headers["referrer-policy"] == "no-referrer"
    short = client.post(
        "/reset-password",
        data={"token": token, "new_password": "short", "csrf_token": csrf(client, "/forgot-password")},
        headers=HTML,
    )
    assert short.status_code == 400 and "10 to" in short.text
    done = client.post(
        "/reset-password",
        data={"token": token, "new_password": "a brand new password", "csrf_token": csrf(client, "/forgot-password")},
        headers=HTML,
    )
    assert done.status_code == 200 and "Your password is changed" in done.text
    login = client.post(
        "/login",
        data={
            "email": "owner@example.org",
            "password": "a brand new password",
            "csrf_token": csrf(client, "/forgot-password"),
        },
        headers=HTML,
    )
    assert login.status_code == 303
    again = client.post(
        "/reset-password",
        data={"token": token, "new_password": "yet another password", "csrf_token": csrf(client, "/forgot-password")},
        headers=HTML,
    )
    assert again.status_code == 400 and "invalid, expired or already used" in again.text


def test_an_expired_or_forged_link_is_refused(client, people, smtp):
    ask_reset(client, "owner@example.org")
    mail.send_pending(db.get_engine())
    token = re.search(r"token=(\S+)", smtp.messages[0].get_content()).group(1)
    with Session(db.get_engine()) as session:
        reset = session.exec(select(PasswordReset)).one()
        reset.expires_at = reset.created_at - timedelta(seconds=1)
        session.add(reset)
        session.commit()
    for bad in (token, "forged", "x" * 5_000, ""):
        page = client.get("/reset-password", params={"token": bad}, headers=HTML)
        assert page.status_code == 400 and "invalid, expired or already used" in page.text


def test_reset_requests_are_rate_limited_per_address(client, people, smtp, monkeypatch):
    from hub import settings

    monkeypatch.setenv("HUB_PASSWORD_RESETS_PER_CLIENT", "2/hour")
    settings.get_settings.cache_clear()
    assert [ask_reset(client, f"u{i}@example.org").status_code for i in range(3)] == [200, 200, 429]


def test_without_smtp_the_page_says_mail_is_off(client, people):
    page = client.get("/forgot-password", headers=HTML)
    assert "This hub sends no e-mail" in page.text
    assert ask_reset(client, "owner@example.org").status_code == 503
