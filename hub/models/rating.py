"""Raters, their invites and assignments, and ratings: one Rating table whatever the backend."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class Rater(SQLModel, table=True):
    """A person who rates. `external_id` (an MTurk worker id, an invite) is private to admins; exports carry
    `public_hash`, a salted hash."""

    __table_args__ = (UniqueConstraint("backend", "external_id", name="uq_rater_backend_external"),)

    id: int | None = Field(default=None, primary_key=True)
    backend: str = Field(max_length=20)
    external_id: str = Field(max_length=200)
    public_hash: str = Field(max_length=64, index=True)
    excluded: bool = False
    exclusion_reason: str | None = Field(default=None, max_length=2_000)
    excluded_at: datetime | None = None
    reviewed_at: datetime | None = Field(
        default=None,
        description="When an admin last decided on this rater (include or exclude); until then the judgements of "
        "a rater the screening flags are held out of public numbers.",
    )
    blocked: bool = Field(default=False, description="Blocked on Mechanical Turk as well.")
    created_at: datetime = Field(default_factory=utcnow)
    invite_id: int | None = Field(default=None, foreign_key="raterinvite.id", index=True)
    client_hash: str | None = Field(
        default=None, max_length=16, index=True, description="Salted hash of the creating client's address."
    )


class RaterInvite(SQLModel, table=True):
    """An invite link for the hub's own rating pages: personal (one rater) or cohort (each browser a rater)."""

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    token_sha256: str = Field(max_length=64, unique=True)
    label: str = Field(default="", max_length=200)
    cohort: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None
    max_raters: int = Field(default=50, description="Cohort invites: how many raters the link may create.")
    rater_count: int = Field(default=0, description="Raters created through this link so far.")


class AssignmentStatus(StrEnum):
    active = "active"  # handed out, not yet submitted
    submitted = "submitted"
    released = "released"  # abandoned past the timeout; its slot went back to the task
    approved = "approved"  # MTurk: paid
    rejected = "rejected"  # MTurk: refused


class Assignment(SQLModel, table=True):
    """One rater's go at one task. A rater gets a task at most once."""

    __table_args__ = (UniqueConstraint("task_id", "rater_id", name="uq_assignment_task_rater"),)

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    task_id: int = Field(foreign_key="task.id", index=True)
    rater_id: int = Field(foreign_key="rater.id", index=True)
    status: AssignmentStatus = Field(default=AssignmentStatus.active, index=True)
    external_assignment_id: str | None = Field(default=None, max_length=200, index=True)
    completion_code: str | None = Field(default=None, max_length=40)
    started_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime | None = None
    submitted_at: datetime | None = None
    seconds_on_task: float | None = None


class Rating(SQLModel, table=True):
    """One judgement of one item. Automatic ties have no assignment and no rater. Never deleted."""

    __table_args__ = (UniqueConstraint("assignment_id", "item_id", name="uq_rating_assignment_item"),)

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    item_id: int = Field(foreign_key="experimentitem.id", index=True)
    assignment_id: int | None = Field(default=None, foreign_key="assignment.id", index=True)
    rater_id: int | None = Field(default=None, foreign_key="rater.id", index=True)
    choice: str | None = Field(default=None, max_length=12, description="left, right, tie, both_good, both_bad")
    outcome: str = Field(max_length=3, description="A, B or tie (what the choice means for the systems)")
    auto_tie: bool = False
    created_at: datetime = Field(default_factory=utcnow)
