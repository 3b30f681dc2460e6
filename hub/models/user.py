"""Accounts (researchers and admins), their API tokens and their browser sessions."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(index=True, unique=True, max_length=320)
    display_name: str = Field(max_length=120)
    password_hash: str = Field(max_length=255)
    is_admin: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    disabled_at: datetime | None = Field(default=None, description="Set by an admin: no login, session or token works.")


class ApiToken(SQLModel, table=True):
    """Only a hash of the token is stored; the token itself is shown once, at creation."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    name: str = Field(max_length=120)
    token_sha256: str = Field(index=True, unique=True, max_length=64)
    prefix: str = Field(max_length=16)
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None


class BrowserSession(SQLModel, table=True):
    """A logged-in browser. The cookie carries a random id; only its SHA-256 is stored, so the table alone cannot be
    replayed. Ended by logout, a password change, disabling the user, or inactivity (see hub/web/sessions.py)."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    id_sha256: str = Field(max_length=64, unique=True)
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None
