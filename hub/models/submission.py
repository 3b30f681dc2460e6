"""A system's response file for one dataset, and where it is in the review/evaluation lifecycle."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, Column, Index, text
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class SubmissionStatus(StrEnum):
    submitted = "submitted"
    approved = "approved"
    rejected = "rejected"
    evaluating = "evaluating"
    evaluated = "evaluated"
    human_evaluation = "human_evaluation"
    complete = "complete"
    failed = "failed"
    withdrawn = "withdrawn"  # by its owner: off every public page and download, rows kept


# While a submission is live (not rejected or failed), its owner cannot submit the same file for the same dataset
# again: a partial unique index, so concurrent identical uploads cannot all pass a check and all insert.
LIVE_UPLOAD = "status NOT IN ('rejected', 'failed', 'withdrawn')"
LIVE_UPLOAD_INDEX = "uq_submission_live_upload"


class Submission(SQLModel, table=True):
    __table_args__ = (
        Index(
            LIVE_UPLOAD_INDEX,
            "owner_id",
            "dataset_name",
            "responses_sha256",
            unique=True,
            sqlite_where=text(LIVE_UPLOAD),
            postgresql_where=text(LIVE_UPLOAD),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    system_id: int = Field(foreign_key="system.id", index=True)
    owner_id: int | None = Field(default=None, foreign_key="user.id", description="The system's owner (uploads).")
    dataset_name: str = Field(index=True, max_length=120)
    dataset_fingerprint: str = Field(max_length=200)
    responses_sha256: str = Field(max_length=64, index=True)
    responses_format: str = Field(default="text", max_length=10)
    loglik_sha256: str | None = Field(default=None, max_length=64)
    baseline_ids: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: SubmissionStatus = Field(default=SubmissionStatus.submitted, index=True)
    review_reason: str | None = Field(default=None, max_length=5_000)
    error: str | None = Field(default=None, max_length=10_000)
    progress: float = 0.0
    heartbeat_at: datetime | None = Field(default=None, description="Last sign of life of the evaluating worker.")
    worker_id: str | None = Field(default=None, max_length=200, description="host:pid of the worker running it.")
    started_at: datetime | None = Field(default=None, description="When the latest evaluation run started.")
    attempts: int = Field(default=0, description="Evaluation runs started (a retry after a lost worker is one more).")
    worker_losses: int = Field(default=0, description="Runs whose worker was lost (no heartbeat) and retried.")
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
