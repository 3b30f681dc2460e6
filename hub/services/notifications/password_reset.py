"""Password reset by e-mail: a random single-use token, stored only as its SHA-256, that expires.

Asking (`request_reset`) does the same work whatever the address: it queues an OutgoingMail row naming the address;
the sending job looks the user up and makes the token (`reset_mail`), so neither the answer nor its timing tells
whether an account exists. Requests are rate-limited per client address. Using the link (`reset_password`) sets the
new password once, ends every browser session of the user and voids the user's other links."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
import urllib.parse
from datetime import timedelta

from sqlalchemy import update
from sqlmodel import Session, col, select

from hub.errors import BadRequest, ServiceUnavailable
from hub.models import OutgoingMail, PasswordReset, User
from hub.models.common import utcnow
from hub.services.accounts import accounts, rate_limits
from hub.settings import get_settings

INVALID_LINK = "this password-reset link is invalid, expired or already used; ask for a new one"
MAX_TOKEN_CHARS = 128  # issued tokens are 43 characters
ASKED = "If an account uses this address, a reset link is on its way; it works once and expires in {minutes} minutes."


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def request_reset(session: Session, *, email: str, client: str) -> str:
    """Queue a reset mail for `email` (whoever it belongs to); the answer every caller gets."""
    rate_limits.take(rate_limits.RESET_CLIENT, client)
    if not get_settings().smtp_host:
        raise ServiceUnavailable("this hub sends no e-mail (HUB_SMTP_HOST is not set); ask an admin to reset it")
    email = accounts.normalise_email(email)
    if len(email) > accounts.MAX_EMAIL or not accounts.EMAIL_PATTERN.fullmatch(email):
        raise BadRequest("enter an email address like name@example.org", field="email")
    session.add(OutgoingMail(kind="password_reset", to_address=email))
    session.commit()
    from hub import queue
    from hub.errors import QueueUnavailable

    with contextlib.suppress(QueueUnavailable):  # else the periodic send_mail job sends it
        queue.enqueue(queue.SEND_MAIL)
    return ASKED.format(minutes=get_settings().password_reset_minutes)


def reset_mail(session: Session, to_address: str) -> tuple[str, str] | None:
    """For the sending job: a new link for the active user with this address, as (subject, body); None if none."""
    user = session.exec(select(User).where(User.email == to_address)).first()
    if user is None or user.id is None or user.disabled_at is not None:
        return None
    token = secrets.token_urlsafe(32)
    minutes = get_settings().password_reset_minutes
    now = utcnow()
    reset = PasswordReset(
        user_id=user.id, token_sha256=_sha256(token), created_at=now, expires_at=now + timedelta(minutes=minutes)
    )
    session.add(reset)
    session.commit()
    link = f"{get_settings().public_url.rstrip('/')}/reset-password?" + urllib.parse.urlencode({"token": token})
    body = (
        f"Someone (hopefully you) asked to reset the password of your ChatEval Hub account {to_address}.\n\n"
        f"Choose a new password here (the link works once, for {minutes} minutes):\n{link}\n\n"
        "If you did not ask, ignore this mail: your password stays as it is."
    )
    return "Reset your ChatEval Hub password", body


def _live_reset(session: Session, token: str) -> PasswordReset:
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise BadRequest(INVALID_LINK, field="token")
    digest = _sha256(token)
    reset = session.exec(select(PasswordReset).where(PasswordReset.token_sha256 == digest)).first()
    if reset is None or not hmac.compare_digest(reset.token_sha256, digest):
        raise BadRequest(INVALID_LINK, field="token")
    expires = reset.expires_at if reset.expires_at.tzinfo else reset.expires_at.replace(tzinfo=utcnow().tzinfo)
    if reset.used_at is not None or expires <= utcnow():
        raise BadRequest(INVALID_LINK, field="token")
    return reset


def check_link(session: Session, token: str) -> None:
    """BadRequest unless the link can still be used (the form page says so before anyone types a password)."""
    _live_reset(session, token)


def reset_password(session: Session, *, token: str, new_password: str) -> User:
    reset = _live_reset(session, token)
    if not accounts.MIN_PASSWORD <= len(new_password) <= accounts.MAX_PASSWORD:
        raise BadRequest(
            f"the password must be {accounts.MIN_PASSWORD} to {accounts.MAX_PASSWORD} characters long",
            field="new_password",
        )
    used = session.exec(  # type: ignore[call-overload]
        update(PasswordReset)
        .where(col(PasswordReset.id) == reset.id, col(PasswordReset.used_at).is_(None))
        .values(used_at=utcnow())
    )
    if used.rowcount != 1:  # another request used it first
        session.rollback()
        raise BadRequest(INVALID_LINK, field="token")
    user = session.get(User, reset.user_id)
    assert user is not None
    user.password_hash = accounts.hash_password(new_password)
    session.add(user)
    session.exec(  # type: ignore[call-overload]
        update(PasswordReset)
        .where(col(PasswordReset.user_id) == user.id, col(PasswordReset.used_at).is_(None))
        .values(used_at=utcnow())
    )
    session.commit()
    accounts.end_sessions(session, user)
    session.refresh(user)
    return user
