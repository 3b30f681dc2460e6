"""What the hub tells people: in-app notifications, the e-mail outbox, and password-reset tokens."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class Notification(SQLModel, table=True):
    """One message for one user (a researcher about their submission or experiment, an admin about work waiting)."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    kind: str = Field(max_length=40, description="What changed, e.g. submission.rejected, experiment.closed.")
    target: str = Field(max_length=80, description="What it is about, e.g. submission #12.")
    subject: str = Field(max_length=200)
    body: str = Field(max_length=5_000)
    link: str = Field(default="", max_length=300, description="A path on the hub, e.g. /submissions/12.")
    created_at: datetime = Field(default_factory=utcnow, index=True)
    read_at: datetime | None = None


class OutgoingMail(SQLModel, table=True):
    """An e-mail waiting for the sending job (never sent inside a request). `kind` password_reset rows hold only the
    address asked for: the job looks the user up and makes the token, so the request does the same work for known
    and unknown addresses. A sent mail's body is emptied (a reset link is a secret)."""

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=40, description="notification or password_reset.")
    to_address: str = Field(max_length=320)
    subject: str = Field(default="", max_length=200)
    body: str = Field(default="", max_length=10_000)
    state: str = Field(
        default="pending", max_length=20, index=True, description="pending, sending, sent, failed, dropped."
    )
    attempts: int = 0
    last_error: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(default_factory=utcnow)
    sent_at: datetime | None = None  # while "sending": when the send began (the lease, see notifications.mail)


class PasswordReset(SQLModel, table=True):
    """A password-reset link: only the SHA-256 of its random token is kept; it expires and works once."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    token_sha256: str = Field(max_length=64, unique=True)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    used_at: datetime | None = None
