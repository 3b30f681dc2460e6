"""Sending the e-mail outbox over SMTP (HUB_SMTP_*), from the send_mail job only, never inside a request.

Each row is claimed with a conditional update (two workers never send one mail twice), sent, and marked sent with
its body emptied; a failure is counted (the error's kind and SMTP code only, never credentials) and retried by the
next run, up to MAX_ATTEMPTS.

A worker that dies mid-send leaves its row in "sending". The claim stamps `sent_at` with the time the send began
(while a row is "sending", `sent_at` is its lease; once "sent", when it was sent), and each run first returns rows
"sending" for longer than SENDING_LEASE to the queue (the claim counted the attempt; past MAX_ATTEMPTS, "failed").
A row marked "sent" is never sent again. SMTP itself is at-least-once here: if the worker died after the server
accepted the message and before the row was marked sent, the mail goes out a second time; it then carries the same
Message-ID (one per row), which receiving systems use to recognise the copy. No SMTP exchange can close that gap:
the server's acceptance and our record of it are two systems."""

from __future__ import annotations

import contextlib
import logging
import smtplib
import ssl
from datetime import timedelta
from email.message import EmailMessage

from sqlalchemy import Engine, case, or_, update
from sqlmodel import Session, col, select

from hub.models import OutgoingMail
from hub.models.common import utcnow
from hub.services.notifications.password_reset import reset_mail
from hub.settings import HubSettings, get_settings

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 5
BATCH = 200
TIMEOUT_SECONDS = 20
# A send takes at most a few SMTP time-outs (connect, login, DATA); a row "sending" for longer lost its worker.
SENDING_LEASE = timedelta(minutes=10)
LOST_WORKER = "worker lost while sending"


def _smtp(settings: HubSettings) -> smtplib.SMTP:
    if settings.smtp_security == "tls":
        client: smtplib.SMTP = smtplib.SMTP_SSL(
            settings.smtp_host, settings.smtp_port, timeout=TIMEOUT_SECONDS, context=ssl.create_default_context()
        )
    else:
        client = smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=TIMEOUT_SECONDS)
        if settings.smtp_security == "starttls":
            client.starttls(context=ssl.create_default_context())
    if settings.smtp_username:
        client.login(settings.smtp_username, settings.smtp_password)
    return client


def _claim(session: Session, mail_id: int) -> bool:
    claimed = session.exec(  # type: ignore[call-overload]
        update(OutgoingMail)
        .where(col(OutgoingMail.id) == mail_id, col(OutgoingMail.state) == "pending")
        .values(state="sending", attempts=OutgoingMail.attempts + 1, sent_at=utcnow())  # sent_at: the lease
    )
    session.commit()
    return claimed.rowcount == 1


def recover_stale(engine: Engine, lease: timedelta = SENDING_LEASE) -> int:
    """Return rows left "sending" for longer than `lease` by a worker that died (or from before the lease was
    stamped) to the queue, or mark them failed past MAX_ATTEMPTS; how many were returned or failed. A password-reset
    row loses its body (the link it held): the next send makes a new one."""
    with Session(engine) as session:
        recovered = session.exec(  # type: ignore[call-overload]
            update(OutgoingMail)
            .where(
                col(OutgoingMail.state) == "sending",
                or_(col(OutgoingMail.sent_at).is_(None), col(OutgoingMail.sent_at) < utcnow() - lease),
            )
            .values(
                state=case((col(OutgoingMail.attempts) >= MAX_ATTEMPTS, "failed"), else_="pending"),
                sent_at=None,
                last_error=LOST_WORKER,
                body=case((col(OutgoingMail.kind) == "password_reset", ""), else_=OutgoingMail.body),
            )
        )
        session.commit()
    if recovered.rowcount:
        log.warning("%s mail(s) left sending by a lost worker returned to the queue", recovered.rowcount)
    return int(recovered.rowcount)


def message_id(mail: OutgoingMail, sender: str) -> str:
    """One Message-ID per outbox row (its id and creation time, under the sender's domain), the same on every
    attempt, so a copy sent again after a lost worker can be recognised by the receiving systems."""
    domain = sender.rpartition("@")[2].strip(" <>") or "chateval-hub.invalid"
    return f"<outbox-{mail.id}.{mail.created_at:%Y%m%d%H%M%S%f}@{domain}>"


def _describe(exc: Exception) -> str:
    code = getattr(exc, "smtp_code", None)
    return f"{type(exc).__name__}" + (f" (SMTP {code})" if code else "")


def send_pending(engine: Engine) -> int:
    """Send the waiting mail; how many were sent. Does nothing when SMTP is not configured."""
    settings = get_settings()
    if not settings.smtp_host:
        return 0
    sent = 0
    recover_stale(engine)
    with Session(engine) as session:
        waiting = session.exec(
            select(OutgoingMail.id).where(OutgoingMail.state == "pending").order_by(col(OutgoingMail.id)).limit(BATCH)
        ).all()
        if not waiting:
            return 0
        client: smtplib.SMTP | None = None
        try:
            for mail_id in waiting:
                if mail_id is None or not _claim(session, mail_id):
                    continue
                mail = session.get(OutgoingMail, mail_id)
                assert mail is not None
                if mail.kind == "password_reset":
                    made = reset_mail(session, mail.to_address)
                    if made is None:  # no such active account: nothing is sent, and nobody is told
                        mail.state, mail.to_address = "dropped", ""
                        session.add(mail)
                        session.commit()
                        continue
                    mail.subject, mail.body = made
                message = EmailMessage()
                message["From"], message["To"], message["Subject"] = settings.smtp_from, mail.to_address, mail.subject
                message["Message-ID"] = message_id(mail, settings.smtp_from)
                message.set_content(mail.body)
                try:
                    client = client or _smtp(settings)
                    client.send_message(message)
                except (smtplib.SMTPException, OSError) as exc:
                    mail.last_error = _describe(exc)
                    mail.state = "failed" if mail.attempts >= MAX_ATTEMPTS else "pending"
                    mail.body = "" if mail.kind == "password_reset" else mail.body  # a new link next time
                    session.add(mail)
                    session.commit()
                    log.warning("mail #%s not sent (%s), attempt %s", mail.id, mail.last_error, mail.attempts)
                    client = None
                    continue
                _mark_sent(session, mail)
                sent += 1
        finally:
            if client is not None:
                with contextlib.suppress(smtplib.SMTPException, OSError):
                    client.quit()
    return sent


def _mark_sent(session: Session, mail: OutgoingMail) -> None:
    """After the server accepted it: sent, when, and the body emptied (a reset link is a secret)."""
    mail.state, mail.sent_at, mail.body, mail.last_error = "sent", utcnow(), "", None
    session.add(mail)
    session.commit()
