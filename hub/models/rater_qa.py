"""MILO's QA of human work: raters' free-text reasons, a judge's PASSED/REDO grades of them per QA run, and an
admin's own grades (the yardstick of the judge's agreement). Reasons are private to admins: no public download or
snapshot reads these tables."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class RatingReason(SQLModel, table=True):
    """A rater's short free-text reason for one judgement, stored with the rating (same assignment and item)."""

    __table_args__ = (UniqueConstraint("assignment_id", "item_id", name="uq_ratingreason_assignment_item"),)

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    assignment_id: int = Field(foreign_key="assignment.id", index=True)
    item_id: int = Field(foreign_key="experimentitem.id", index=True)
    rater_id: int = Field(foreign_key="rater.id", index=True)
    text: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class RaterQaRun(SQLModel, table=True):
    """One run of a QA rubric, graded by a registered judge, over the reasons of one experiment."""

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    judge_id: int = Field(foreign_key="judge.id", index=True)
    rubric: str = Field(max_length=200, description="id@version")
    rubric_yaml: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(default="queued", max_length=20, index=True, description="queued, running, done, failed")
    progress: float = 0.0
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    error: str | None = Field(default=None, max_length=2_000)
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class RaterQaGrade(SQLModel, table=True):
    """The judge's verdict on one reason in one QA run: score, PASSED/REDO (None: not graded) and explanations."""

    __table_args__ = (UniqueConstraint("run_id", "reason_id", name="uq_raterqagrade_run_reason"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="raterqarun.id", index=True)
    reason_id: int = Field(foreign_key="ratingreason.id", index=True)
    score: float | None = None
    status: str | None = Field(default=None, max_length=10)
    criteria: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class RaterQaAdminGrade(SQLModel, table=True):
    """An admin's own PASSED/REDO on one reason; grading it again replaces it."""

    __table_args__ = (UniqueConstraint("reason_id", name="uq_raterqaadmingrade_reason"),)

    id: int | None = Field(default=None, primary_key=True)
    reason_id: int = Field(foreign_key="ratingreason.id", index=True)
    admin_id: int = Field(foreign_key="user.id", index=True)
    status: str = Field(max_length=10, description="PASSED or REDO")
    created_at: datetime = Field(default_factory=utcnow)
