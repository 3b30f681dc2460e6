"""Accounts: creating users, checking and changing passwords, disabling users, issuing, resolving and revoking API
tokens, and the server-side record of browser sessions (hub/web/sessions.py keeps the cookie side)."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized
from hub.models import ApiToken, BrowserSession, User
from hub.models.common import utcnow
from hub.services.accounts import rate_limits
from hub.services.platform import audit
from hub.settings import get_settings

MIN_PASSWORD, MAX_PASSWORD = 10, 1024
MAX_EMAIL, MAX_DISPLAY_NAME, MAX_TOKEN_NAME = 320, 120, 120
TOKEN_PREFIX = "ceh_"
MAX_TOKEN_LENGTH = 128  # issued tokens are 47 characters; anything far longer is not one of ours
# Deliberately loose: the real check is whether mail arrives. This only catches typos and pasted junk.
EMAIL_PATTERN = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")

WRONG_CREDENTIALS = "wrong email or password"
INVALID_TOKEN = "invalid or revoked API token"
DISABLED = "this account is disabled; ask the hub's admins"
SESSION_TOUCH = timedelta(seconds=60)  # last_seen_at is written at most once a minute per session

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):  # VerifyMismatchError is a VerificationError
        return False


@lru_cache
def _dummy_hash() -> str:
    # Made once, lazily, so importing this module stays cheap.
    return hash_password(secrets.token_urlsafe(16))


def normalise_email(email: str) -> str:
    return email.strip().lower()


def create_user(session: Session, *, email: str, password: str, display_name: str, is_admin: bool = False) -> User:
    email = normalise_email(email)
    display_name = display_name.strip()
    if len(email) > MAX_EMAIL or not EMAIL_PATTERN.fullmatch(email):
        raise BadRequest("enter an email address like name@example.org", field="email")
    _check_password(password, field="password")
    if not 1 <= len(display_name) <= MAX_DISPLAY_NAME:
        raise BadRequest(f"the display name must be 1 to {MAX_DISPLAY_NAME} characters long", field="display_name")
    if _user_by_email(session, email) is not None:
        raise Conflict("an account with this email already exists", field="email")
    user = User(email=email, password_hash=hash_password(password), display_name=display_name, is_admin=is_admin)
    session.add(user)
    try:
        session.commit()
    except IntegrityError as exc:  # another request registered the same email between our check and commit
        session.rollback()
        raise Conflict("an account with this email already exists", field="email") from exc
    session.refresh(user)
    return user


def _check_password(password: str, *, field: str) -> None:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise BadRequest(f"the password must be {MIN_PASSWORD} to {MAX_PASSWORD} characters long", field=field)


def authenticate(session: Session, *, email: str, password: str, client: str = "unknown") -> User:
    """The user with these credentials; unknown email and wrong password fail alike, in message and in time.

    Failures are counted per account and per client address; once either limit is used up every attempt, the right
    password included, gets TooManyRequests until the window ends. A disabled user gets Forbidden."""
    email = normalise_email(email)
    rate_limits.check(rate_limits.LOGIN_ACCOUNT, email)
    rate_limits.check(rate_limits.LOGIN_CLIENT, client)
    user = _user_by_email(session, email)
    if user is None:
        verify_password(_dummy_hash(), password)  # spend the same time as a real check
    if user is None or not verify_password(user.password_hash, password):
        rate_limits.hit(rate_limits.LOGIN_ACCOUNT, email)
        rate_limits.hit(rate_limits.LOGIN_CLIENT, client)
        raise Unauthorized(WRONG_CREDENTIALS)
    if user.disabled_at is not None:
        raise Forbidden(DISABLED)
    if _hasher.check_needs_rehash(user.password_hash):  # hashing parameters were raised since this hash was made
        user.password_hash = hash_password(password)
        session.add(user)
        session.commit()
        session.refresh(user)
    return user


def _user_by_email(session: Session, email: str) -> User | None:
    return session.exec(select(User).where(User.email == email)).first()


def _token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_token(session: Session, user: User, *, name: str) -> tuple[ApiToken, str]:
    """A new token for `user`. The plaintext is returned here once and never stored, only its SHA-256."""
    name = name.strip()
    if not 1 <= len(name) <= MAX_TOKEN_NAME:
        raise BadRequest(f"the token name must be 1 to {MAX_TOKEN_NAME} characters long", field="name")
    secret = secrets.token_urlsafe(32)
    token = TOKEN_PREFIX + secret
    api_token = ApiToken(user_id=user.id, name=name, token_sha256=_token_sha256(token), prefix=secret[:8])
    session.add(api_token)
    session.commit()
    session.refresh(api_token)
    return api_token, token


def user_for_token(session: Session, token: str, *, client: str = "unknown") -> User:
    """The owner of a live token. Looking up by hash means no stored secret is ever compared byte by byte,
    so response time reveals nothing about how close a guess was. Unknown tokens are counted per client
    address; past the limit every token from that address gets TooManyRequests until the window ends."""
    rate_limits.check(rate_limits.TOKEN_CLIENT, client)
    user = _live_token_owner(session, token)
    if user is None:
        rate_limits.hit(rate_limits.TOKEN_CLIENT, client)
        raise Unauthorized(INVALID_TOKEN)
    if user.disabled_at is not None:
        raise Forbidden(DISABLED)
    return user


def _live_token_owner(session: Session, token: str) -> User | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_LENGTH:
        return None
    statement = select(ApiToken).where(ApiToken.token_sha256 == _token_sha256(token))
    api_token = session.exec(statement).first()
    if api_token is None or api_token.revoked_at is not None:
        return None
    return session.get(User, api_token.user_id)


def revoke_token(session: Session, user: User, token_id: int) -> ApiToken:
    """Revoke one of `user`'s tokens; revoking twice keeps the first revocation time."""
    api_token = session.get(ApiToken, token_id)
    # Someone else's token reads as missing, so token ids of other users are never confirmed.
    if api_token is None or api_token.user_id != user.id:
        raise NotFound("no such API token")
    if api_token.revoked_at is None:
        api_token.revoked_at = utcnow()
        session.add(api_token)
        session.commit()
        session.refresh(api_token)
    return api_token


def list_tokens(session: Session, user: User) -> list[ApiToken]:
    """All of `user`'s tokens, revoked ones included, oldest first."""
    statement = select(ApiToken).where(ApiToken.user_id == user.id).order_by(col(ApiToken.created_at), col(ApiToken.id))
    return list(session.exec(statement))


# ---- changing the password, disabling users ----


def change_password(session: Session, user: User, *, current: str, new: str, keep_session: str | None = None) -> None:
    """Set a new password after checking the current one; every browser session of the user except `keep_session`
    (the id of the one making the change) ends."""
    if not verify_password(user.password_hash, current):
        raise Unauthorized("the current password is wrong", field="current_password")
    _check_password(new, field="new_password")
    user.password_hash = hash_password(new)
    session.add(user)
    session.commit()
    end_sessions(session, user, keep=keep_session)


def set_disabled(session: Session, admin: User | None, user_id: int, *, disabled: bool) -> User:
    """Disable a user (no login, browser session or API token works; their sessions end) or enable them again.
    `admin` is None for the command line. Audited; idempotent."""
    if admin is not None and not admin.is_admin:
        raise Forbidden("only admins disable or enable users")
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"no user #{user_id}")
    if admin is not None and admin.id == user.id and disabled:
        raise Conflict("admins cannot disable their own account", field="user_id")
    if disabled and user.disabled_at is None:
        user.disabled_at = utcnow()
    elif not disabled:
        user.disabled_at = None
    session.add(user)
    session.commit()
    ended = end_sessions(session, user) if disabled else 0
    detail = {"user": user.id, "email": user.email, "sessions_ended": ended}
    action = "disable_user" if disabled else "enable_user"
    audit.record(session, actor=admin, action=action, target=f"user #{user.id}", detail=detail)
    session.refresh(user)
    return user


def user_by_email(session: Session, email: str) -> User:
    user = _user_by_email(session, normalise_email(email))
    if user is None:
        raise NotFound(f"no user with the email {email!r}", field="email")
    return user


def list_users(session: Session, admin: User) -> list[User]:
    if not admin.is_admin:
        raise Forbidden("only admins list users")
    return list(session.exec(select(User).order_by(col(User.id))))


# ---- browser sessions: the server-side record behind the session cookie ----


def _session_sha256(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def start_session(session: Session, user: User) -> str:
    """A new browser session for `user`: returns the random id the cookie carries (only its hash is stored)."""
    session_id = secrets.token_urlsafe(32)
    too_old = utcnow() - timedelta(days=get_settings().session_max_days)
    expired = delete(BrowserSession).where(  # the user's sessions past the absolute limit: dead anyway
        col(BrowserSession.user_id) == user.id, col(BrowserSession.created_at) < too_old
    )
    session.exec(expired)  # type: ignore[call-overload]
    session.add(BrowserSession(user_id=user.id, id_sha256=_session_sha256(session_id)))
    session.commit()
    return session_id


def session_user(session: Session, session_id: str) -> User | None:
    """The user of a live browser session: not ended, used within the idle limit, younger than the absolute
    limit, its user not disabled. Records the use (at most once a minute)."""
    if not session_id or len(session_id) > 100:
        return None
    row = session.exec(select(BrowserSession).where(BrowserSession.id_sha256 == _session_sha256(session_id))).first()
    if row is None or row.revoked_at is not None:
        return None
    settings, now = get_settings(), utcnow()
    if now - row.last_seen_at > timedelta(minutes=settings.session_idle_minutes):
        return None
    if now - row.created_at > timedelta(days=settings.session_max_days):
        return None
    user = session.get(User, row.user_id)
    if user is None or user.disabled_at is not None:
        return None
    if now - row.last_seen_at > SESSION_TOUCH:
        row.last_seen_at = now
        session.add(row)
        session.commit()
        session.refresh(user)
    return user


def end_session(session: Session, session_id: str) -> None:
    statement = (
        update(BrowserSession)
        .where(col(BrowserSession.id_sha256) == _session_sha256(session_id), col(BrowserSession.revoked_at).is_(None))
        .values(revoked_at=utcnow())
    )
    session.exec(statement)  # type: ignore[call-overload]
    session.commit()


def end_sessions(session: Session, user: User, *, keep: str | None = None) -> int:
    """End every live browser session of `user` (but the one with id `keep`); returns how many ended."""
    statement = (
        update(BrowserSession)
        .where(col(BrowserSession.user_id) == user.id, col(BrowserSession.revoked_at).is_(None))
        .values(revoked_at=utcnow())
    )
    if keep:
        statement = statement.where(col(BrowserSession.id_sha256) != _session_sha256(keep))
    ended = session.exec(statement).rowcount  # type: ignore[call-overload]
    session.commit()
    return int(ended or 0)
