"""Item 4: e-mail through a real SMTP server (aiosmtpd), sent by the job, and password reset by e-mail."""

from __future__ import annotations

import contextlib
import re
from datetime import timedelta

import pytest
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


def _rows() -> list[OutgoingMail]:
    with Session(db.get_engine()) as session:
        return list(session.exec(select(OutgoingMail).order_by(OutgoingMail.id)))


def _claimed_by_a_worker_that_dies(mail_id: int, minutes_ago: float) -> None:
    """What a worker does before it sends (the claim), then nothing: it died; its claim is `minutes_ago` old."""
    with Session(db.get_engine()) as session:
        assert mail._claim(session, mail_id)
        row = session.get(OutgoingMail, mail_id)
        row.sent_at = row.sent_at - timedelta(minutes=minutes_ago)
        session.add(row)
        session.commit()


def test_mail_left_sending_by_a_dead_worker_is_sent_once_after_its_lease(client, people, smtp):
    post(client, people["owner"])  # "waiting for review" to the owner, "awaits review" to the admin
    first, second = (row.id for row in _rows()[:2])
    lease = mail.SENDING_LEASE.total_seconds() / 60
    _claimed_by_a_worker_that_dies(first, minutes_ago=lease + 1)
    _claimed_by_a_worker_that_dies(second, minutes_ago=lease - 1)  # perhaps still being sent: left alone
    assert mail.send_pending(db.get_engine()) == len(_rows()) - 1
    states = {row.id: (row.state, row.attempts, row.last_error) for row in _rows()}
    assert states[first] == ("sent", 2, None) and states[second] == ("sending", 1, None)
    assert len(smtp.messages) == len(_rows()) - 1
    assert mail.send_pending(db.get_engine()) == 0 and len(smtp.messages) == len(_rows()) - 1  # sent ones never again
    with Session(db.get_engine()) as session:  # the second claim's lease runs out too
        row = session.get(OutgoingMail, second)
        row.sent_at -= timedelta(minutes=2)
        session.add(row)
        session.commit()
    assert mail.send_pending(db.get_engine()) == 1
    assert len(smtp.messages) == len(_rows()) and len({m["Message-ID"] for m in smtp.messages}) == len(_rows())


def test_a_mail_lost_with_every_attempt_used_fails_instead_of_returning(client, people, smtp):
    post(client, people["owner"])
    target = _rows()[0].id
    with Session(db.get_engine()) as session:
        row = session.get(OutgoingMail, target)
        row.attempts = mail.MAX_ATTEMPTS - 1
        session.add(row)
        session.commit()
    _claimed_by_a_worker_that_dies(target, minutes_ago=mail.SENDING_LEASE.total_seconds() / 60 + 1)
    assert mail.recover_stale(db.get_engine()) == 1
    row = next(r for r in _rows() if r.id == target)
    assert (row.state, row.attempts, row.last_error) == ("failed", mail.MAX_ATTEMPTS, mail.LOST_WORKER)
    mail.send_pending(db.get_engine())
    assert all(m["Message-ID"] != mail.message_id(row, "x@localhost") for m in smtp.messages)


class WorkerKilled(BaseException):
    """Stands for the worker process dying (not an error the job could catch)."""


def test_smtp_is_at_least_once_a_copy_after_a_lost_acceptance_carries_the_same_message_id(client, people, smtp):
    """The server accepted the mail, then the worker died before recording it: after the lease it goes out again
    (SMTP cannot tell us otherwise), with the same Message-ID for the receivers to recognise the copy."""
    post(client, people["owner"])

    def dies(session, row):
        raise WorkerKilled("the worker is killed after the server accepted the mail")

    with pytest.MonkeyPatch.context() as patch, contextlib.suppress(WorkerKilled):
        patch.setattr(mail, "_mark_sent", dies)
        mail.send_pending(db.get_engine())
    [accepted] = smtp.messages
    [lost] = [row for row in _rows() if row.state == "sending"]
    with Session(db.get_engine()) as session:
        row = session.get(OutgoingMail, lost.id)
        row.sent_at -= mail.SENDING_LEASE + timedelta(seconds=1)
        session.add(row)
        session.commit()
    mail.send_pending(db.get_engine())
    copies = [m for m in smtp.messages if m["Message-ID"] == accepted["Message-ID"]]
    assert len(copies) == 2 and copies[0]["Subject"] == copies[1]["Subject"]
    assert {row.state for row in _rows()} == {"sent"}


def _statements_of(client, email: str) -> tuple[object, list[str]]:
    """The answer to POST /api/password-reset and every SQL statement it ran (their text, not their values)."""
    from sqlalchemy import event

    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    event.listen(db.get_engine(), "before_cursor_execute", record)
    try:
        reply = client.post("/api/password-reset", json={"email": email})
    finally:
        event.remove(db.get_engine(), "before_cursor_execute", record)
    return reply, seen


def test_password_reset_api_does_the_same_for_any_address_and_its_link_works_once(client, people, smtp):
    known, known_sql = _statements_of(client, "Owner@example.org")
    unknown, unknown_sql = _statements_of(client, "nobody@example.org")
    assert known.status_code == unknown.status_code == 202
    assert known.json() == unknown.json() and "a reset link is on its way" in known.json()["message"]
    assert known_sql == unknown_sql and any("outgoingmail" in s.lower() for s in known_sql)  # the same work: no lookup
    assert all('from "user"' not in s.lower() and "from user " not in s.lower() for s in known_sql)
    assert mail.send_pending(db.get_engine()) == 1
    token = re.search(r"token=(\S+)", smtp.messages[0].get_content()).group(1)

    short = client.post("/api/password-reset/confirm", json={"token": token, "new_password": "short"})
    assert short.status_code == 400 and short.json()["field"] == "new_password"
    done = client.post("/api/password-reset/confirm", json={"token": token, "new_password": "a brand new password"})
    assert done.status_code == 200 and done.headers["cache-control"] == "no-store"
    login = client.post(
        "/login",
        data={"email": "owner@example.org", "password": "a brand new password", "csrf_token": csrf(client, "/login")},
        headers=HTML,
    )
    assert login.status_code == 303
    client.cookies.clear()  # signed in, a browser session must send its CSRF token; an API caller has no session
    for token_sent in (token, "forged", "x" * 1_000):
        again = client.post("/api/password-reset/confirm", json={"token": token_sent, "new_password": "another one!"})
        assert again.status_code == 400 and again.json()["field"] == "token"
        assert "invalid, expired or already used" in again.json()["error"]


def test_password_reset_api_refusals(client, people, smtp, monkeypatch):
    from hub import settings

    bad = client.post("/api/password-reset", json={"email": "not an address"})
    assert bad.status_code == 400 and bad.json()["field"] == "email"
    too_long = client.post("/api/password-reset", json={"email": "a" * 1_001 + "@example.org"})
    assert too_long.status_code == 422  # over the body's declared bound
    monkeypatch.setenv("HUB_PASSWORD_RESETS_PER_CLIENT", "2/hour")
    settings.get_settings.cache_clear()
    replies = [client.post("/api/password-reset", json={"email": f"u{i}@example.org"}) for i in range(3)]
    assert [r.status_code for r in replies] == [202, 202, 429]
    assert 0 < int(replies[2].headers["Retry-After"]) <= 3_600 and "password-reset" in replies[2].json()["error"]
    paths = client.get("/openapi.json").json()["paths"]
    assert {"429", "503"} <= set(paths["/api/password-reset"]["post"]["responses"])
    assert "400" in paths["/api/password-reset/confirm"]["post"]["responses"]


def test_password_reset_api_without_smtp_is_503(client, people):
    reply = client.post("/api/password-reset", json={"email": "owner@example.org"})
    assert reply.status_code == 503 and "sends no e-mail" in reply.json()["error"]
