"""Jobs committed in the same transaction as the state change that needs them, sent to the queue afterwards.

A row exists from the commit until the queue has accepted the job; if the queue is down, the row stays and the
periodic sweep (`hub.jobs.requeue_stalled`) sends it once the queue is back (a transactional outbox)."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class OutboxJob(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    task: str = Field(max_length=60, description="The queue task's name, e.g. evaluate_submission.")
    submission_id: int = Field(foreign_key="submission.id", index=True)
    attempts: int = Field(default=0, description="Failed attempts to hand the job to the queue.")
    last_error: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(default_factory=utcnow)
