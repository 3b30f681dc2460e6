"""Sending the e-mail outbox over SMTP (HUB_SMTP_*), from the send_mail job only, never inside a request.

Each row is claimed with a conditional update (two workers never send one mail twice), sent, and marked sent with
its body emptied; a failure is counted (the error's kind and SMTP code only, never credentials) and retried by the
next run, up to MAX_ATTEMPTS."""

from __future__ import annotations

import contextlib
import logging
import smtplib
import ssl
from email.message import EmailMessage

from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from hub.models import OutgoingMail
from hub.models.common import utcnow
from hub.services.notifications.password_reset import reset_mail
from hub.settings import HubSettings, get_settings

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 5
BATCH = 200
TIMEOUT_SECONDS = 20


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
        .values(state="sending", attempts=OutgoingMail.attempts + 1)
    )
    session.commit()
    return claimed.rowcount == 1


def _describe(exc: Exception) -> str:
    code = getattr(exc, "smtp_code", None)
    return f"{type(exc).__name__}" + (f" (SMTP {code})" if code else "")


def send_pending(engine: Engine) -> int:
    """Send the waiting mail; how many were sent. Does nothing when SMTP is not configured."""
    settings = get_settings()
    if not settings.smtp_host:
        return 0
    sent = 0
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
                mail.state, mail.sent_at, mail.body, mail.last_error = "sent", utcnow(), "", None
                session.add(mail)
                session.commit()
                sent += 1
        finally:
            if client is not None:
                with contextlib.suppress(smtplib.SMTPException, OSError):
                    client.quit()
    return sent
