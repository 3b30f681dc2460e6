"""The job outbox: a job is committed with the state change that needs it, then handed to the queue.

`add` puts the job in the caller's transaction; `dispatch` hands one committed job to the queue and deletes it once
the queue accepted it; if the queue is unavailable the job stays, and `drain` (run by the periodic sweep) sends it
when the queue is back. A job can reach the queue twice (accepted, then the process dies before deleting it): the
evaluation claims its submission with a conditional update, so a second job for it does nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Engine
from sqlmodel import Session, select

from hub.errors import QueueUnavailable
from hub.models import OutboxJob
from hub.models.common import utcnow

Send = Callable[[OutboxJob], None]
# A job younger than this is probably being handed over by the request that made it; the sweep leaves it alone.
OUTBOX_GRACE = timedelta(seconds=30)


def add(session: Session, task: str, submission_id: int) -> OutboxJob:
    """A job for `submission_id`, part of the session's transaction (committed by the caller)."""
    job = OutboxJob(task=task, submission_id=submission_id)
    session.add(job)
    return job


def waiting(session: Session, task: str, submission_id: int) -> OutboxJob | None:
    query = select(OutboxJob).where(OutboxJob.task == task, OutboxJob.submission_id == submission_id)
    return session.exec(query.order_by(OutboxJob.id)).first()


def dispatch(session: Session, job: OutboxJob, send: Send) -> None:
    """Hand a committed job to the queue and delete it; QueueUnavailable leaves it (counted) for the sweep."""
    try:
        send(job)
    except QueueUnavailable as exc:
        job.attempts += 1
        job.last_error = exc.message[:500]
        session.add(job)
        session.commit()
        raise
    session.delete(job)
    session.commit()


def drain(engine: Engine, send: Send) -> list[int]:
    """Send the waiting jobs older than OUTBOX_GRACE (oldest first) until the queue refuses one; the ids sent."""
    cutoff = utcnow() - OUTBOX_GRACE
    sent = []
    with Session(engine) as session:
        jobs = session.exec(select(OutboxJob).where(OutboxJob.created_at <= cutoff).order_by(OutboxJob.id)).all()
        for job in jobs:
            try:
                dispatch(session, job, send)
            except QueueUnavailable:
                break
            sent.append(job.submission_id)
    return sent
