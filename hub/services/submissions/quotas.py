"""Daily submission quotas per researcher, in UTC days; admins are exempt.

Two counts, each reset at 00:00 UTC:

- valid submissions (`HUB_SUBMISSIONS_PER_DAY`): counted from the submission and conversation-set rows the
  researcher created today, so a file refused by validation never counts, nor does one whose evaluation failed (the
  hub's failure is not the researcher's); a withdrawn or rejected one does. The check before inserting runs under a
  lock on the researcher's user row (a no-op UPDATE: a row lock on PostgreSQL, the database's write lock on
  SQLite), so concurrent uploads cannot all pass it.
- attempts (`HUB_SUBMISSION_ATTEMPTS_PER_DAY`, higher): every upload request (response files and conversation
  sets), valid or not, counted in the rate-limit
  store (hub/services/accounts/rate_limits.py) under a key holding the UTC date. If that store cannot be reached the
  attempt is let through uncounted (a warning): the valid-submission quota still holds.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from limits import RateLimitItemPerDay
from limits.errors import StorageError
from sqlmodel import Session, col, func, select

from hub.errors import TooManyRequests
from hub.models import ConversationSet, Submission, SubmissionStatus, User
from hub.services.accounts import rate_limits
from hub.settings import get_settings

log = logging.getLogger(__name__)
ATTEMPTS = "submission-attempts"  # the counter's namespace in the rate-limit store
NOT_COUNTED = (SubmissionStatus.failed,)  # evaluation failures do not use up the quota


def day_start(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(UTC).date(), time(0), tzinfo=UTC)


def next_reset(now: datetime) -> datetime:
    """The next 00:00 UTC after `now`."""
    return day_start(now) + timedelta(days=1)


def seconds_to_reset(now: datetime) -> int:
    return max(1, math.ceil((next_reset(now) - now).total_seconds()))


def _reset_words(now: datetime) -> str:
    return f"{next_reset(now):%Y-%m-%d %H:%M} UTC"


@dataclass(frozen=True)
class Quota:
    """Where a researcher stands today. `exempt`: an admin, never limited."""

    per_day: int
    used: int
    attempts_per_day: int
    attempts_used: int
    resets_at: datetime
    exempt: bool

    @property
    def left(self) -> int:
        return max(0, self.per_day - self.used)

    @property
    def attempts_left(self) -> int:
        return max(0, self.attempts_per_day - self.attempts_used)

    def as_dict(self) -> dict[str, Any]:
        return {
            "exempt": self.exempt,
            "submissions_per_day": self.per_day,
            "submissions_used": self.used,
            "submissions_left": None if self.exempt else self.left,
            "attempts_per_day": self.attempts_per_day,
            "attempts_used": self.attempts_used,
            "attempts_left": None if self.exempt else self.attempts_left,
            "resets_at": self.resets_at.isoformat().replace("+00:00", "Z"),
            "resets_in_seconds": seconds_to_reset(datetime.now(UTC)),
            "counts": "valid submissions and conversation sets created today (UTC), except those whose evaluation "
            "failed; attempts: every upload (response files and conversation sets), valid or not",
        }


def used_today(session: Session, owner_id: int, now: datetime) -> int:
    """Submissions and conversation sets the researcher created today (UTC), except those whose evaluation failed."""
    submissions = (
        select(func.count())
        .select_from(Submission)
        .where(
            Submission.owner_id == owner_id,
            col(Submission.created_at) >= day_start(now),
            col(Submission.status).not_in(NOT_COUNTED),
        )
    )
    conversation_sets = (
        select(func.count())
        .select_from(ConversationSet)
        .where(
            ConversationSet.owner_id == owner_id,
            col(ConversationSet.created_at) >= day_start(now),
            col(ConversationSet.status) != "failed",
        )
    )
    return int(session.exec(submissions).one()) + int(session.exec(conversation_sets).one())


def _attempt_item() -> RateLimitItemPerDay:
    return RateLimitItemPerDay(get_settings().submission_attempts_per_day)


def _attempt_key(user: User, now: datetime) -> str:
    return f"{user.id}:{now.astimezone(UTC).date().isoformat()}"  # a new counter every UTC day


def attempts_today(user: User, now: datetime) -> int:
    item = _attempt_item()
    try:
        stats = rate_limits.limiter().get_window_stats(item, ATTEMPTS, _attempt_key(user, now))
    except StorageError:
        return 0
    return max(0, item.amount - stats.remaining)


def quota(session: Session, user: User, now: datetime | None = None) -> Quota:
    """What `user` has used today and when it resets."""
    now = now or datetime.now(UTC)
    assert user.id is not None
    settings = get_settings()
    return Quota(
        per_day=settings.submissions_per_day,
        used=used_today(session, user.id, now),
        attempts_per_day=settings.submission_attempts_per_day,
        attempts_used=attempts_today(user, now),
        resets_at=next_reset(now),
        exempt=user.is_admin,
    )


def take_attempt(user: User) -> None:
    """Count one upload attempt (valid or not); 429 once today's attempts are used up."""
    if user.is_admin:
        return
    now = datetime.now(UTC)
    item = _attempt_item()
    try:
        allowed = rate_limits.limiter().hit(item, ATTEMPTS, _attempt_key(user, now))
    except StorageError as exc:
        log.warning("rate limit store unavailable, submission attempt not counted: %s", exc.storage_error)
        return
    if not allowed:
        raise TooManyRequests(
            f"daily upload attempt limit reached: {item.amount} uploads (valid or not) per UTC day; "
            f"it resets at {_reset_words(now)}",
            retry_after=seconds_to_reset(now),
        )


def check(session: Session, owner: User, count: int) -> None:
    """429 if `count` more submissions would go over today's quota (no lock: the early, cheap refusal)."""
    if owner.is_admin:
        return
    assert owner.id is not None
    now = datetime.now(UTC)
    per_day = get_settings().submissions_per_day
    used = used_today(session, owner.id, now)
    if used + count > per_day:
        left = max(0, per_day - used)
        raise TooManyRequests(
            f"daily submission quota reached: {per_day} submission{'s' if per_day != 1 else ''} per UTC day, "
            f"{used} used today, {left} left"
            + (f" (this upload makes {count})" if count > 1 else "")
            + f"; it resets at {_reset_words(now)}",
            retry_after=seconds_to_reset(now),
        )


def reserve(session: Session, owner: User, count: int) -> None:
    """The check again under a lock on the owner's row, held until the caller commits (or rolls back): call it in
    the transaction that inserts the submissions, just before inserting them."""
    if owner.is_admin:
        return
    users = User.__table__  # type: ignore[attr-defined]
    session.execute(sa.update(users).where(users.c.id == owner.id).values(display_name=users.c.display_name))
    try:
        check(session, owner, count)
    except TooManyRequests:
        session.rollback()
        raise
