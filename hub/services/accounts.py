"""Accounts: creating users, checking passwords, and issuing, resolving and revoking API tokens."""

from __future__ import annotations

import hashlib
import re
import secrets
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.errors import BadRequest, Conflict, NotFound, Unauthorized
from hub.models import ApiToken, User
from hub.models.common import utcnow

MIN_PASSWORD, MAX_PASSWORD = 10, 1024
MAX_EMAIL, MAX_DISPLAY_NAME, MAX_TOKEN_NAME = 320, 120, 120
TOKEN_PREFIX = "ceh_"
MAX_TOKEN_LENGTH = 128  # issued tokens are 47 characters; anything far longer is not one of ours
# Deliberately loose: the real check is whether mail arrives. This only catches typos and pasted junk.
EMAIL_PATTERN = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")

WRONG_CREDENTIALS = "wrong email or password"
INVALID_TOKEN = "invalid or revoked API token"

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
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise BadRequest(f"the password must be {MIN_PASSWORD} to {MAX_PASSWORD} characters long", field="password")
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


def authenticate(session: Session, *, email: str, password: str) -> User:
    """The user with these credentials; unknown email and wrong password fail alike, in message and in time."""
    user = _user_by_email(session, normalise_email(email))
    if user is None:
        verify_password(_dummy_hash(), password)  # spend the same time as a real check
        raise Unauthorized(WRONG_CREDENTIALS)
    if not verify_password(user.password_hash, password):
        raise Unauthorized(WRONG_CREDENTIALS)
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


def user_for_token(session: Session, token: str) -> User:
    """The owner of a live token. Looking up by hash means no stored secret is ever compared byte by byte,
    so response time reveals nothing about how close a guess was."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_LENGTH:
        raise Unauthorized(INVALID_TOKEN)
    statement = select(ApiToken).where(ApiToken.token_sha256 == _token_sha256(token))
    api_token = session.exec(statement).first()
    if api_token is None or api_token.revoked_at is not None:
        raise Unauthorized(INVALID_TOKEN)
    user = session.get(User, api_token.user_id)
    if user is None:
        raise Unauthorized(INVALID_TOKEN)
    return user


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
