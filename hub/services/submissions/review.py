"""Admin review: approve (which queues the automatic evaluation), reject with a reason, re-run. Audited."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from hub.errors import BadRequest, Conflict, Forbidden, NotFound
from hub.models import OutboxJob, Submission, SubmissionStatus, User
from hub.models.common import utcnow
from hub.queue import EVALUATE_SUBMISSION
from hub.services.notifications.status_words import submission_words
from hub.services.platform import audit, outbox

Enqueue = Callable[[int], None]
RERUNNABLE = {SubmissionStatus.failed, SubmissionStatus.evaluated, SubmissionStatus.complete}


def _words(submission: Submission) -> str:
    """Its status as people read it, e.g. "now: Human evaluation"."""
    return f"now: {submission_words(submission.status).label}"


def _admin_submission(session: Session, admin: User, submission_id: int) -> Submission:
    if not admin.is_admin:
        raise Forbidden("only admins can review submissions")
    submission = session.get(Submission, submission_id)
    if submission is None:
        raise NotFound(f"no submission #{submission_id}")
    return submission


def _move(session: Session, admin: User, submission: Submission, status: SubmissionStatus, action: str, **detail):
    previous = submission.status
    submission.status, submission.updated_at = status, utcnow()
    session.add(submission)
    session.commit()
    audit.record(
        session,
        actor=admin,
        action=action,
        target=f"submission #{submission.id}",
        detail={"from": previous, "to": status, **detail},
    )
    session.refresh(submission)
    return submission


def approve(session: Session, admin: User, submission_id: int, *, enqueue: Enqueue) -> Submission:
    """Approve and queue the evaluation. The job is committed with the approval (outbox) and sent after the commit;
    if the queue is down, QueueUnavailable (503): the sweep sends it later, or approving again sends it now."""
    submission = _admin_submission(session, admin, submission_id)
    stranded = outbox.waiting(session, EVALUATE_SUBMISSION, submission_id)
    if submission.status == SubmissionStatus.approved and stranded is not None:
        _send(session, stranded, enqueue)  # approved while the queue was down: try again now
        return submission
    if submission.status != SubmissionStatus.submitted:
        raise Conflict(f"submission #{submission_id} is not waiting for review ({_words(submission)})")
    submission.review_reason = None
    job = outbox.add(session, EVALUATE_SUBMISSION, submission_id)
    _move(session, admin, submission, SubmissionStatus.approved, "approve")
    _send(session, job, enqueue)
    return submission


def _send(session: Session, job: OutboxJob, enqueue: Enqueue) -> None:
    """After the commit, so the worker sees the approved state."""
    outbox.dispatch(session, job, lambda waiting: enqueue(waiting.submission_id))


def reject(session: Session, admin: User, submission_id: int, *, reason: str) -> Submission:
    submission = _admin_submission(session, admin, submission_id)
    if submission.status != SubmissionStatus.submitted:
        raise Conflict(f"submission #{submission_id} is not waiting for review ({_words(submission)})")
    reason = reason.strip()
    if not reason:
        raise BadRequest("give the researcher a reason for the rejection", field="reason")
    submission.review_reason = reason[:5_000]
    return _move(session, admin, submission, SubmissionStatus.rejected, "reject", reason=submission.review_reason)


def rerun(session: Session, admin: User, submission_id: int, *, enqueue: Enqueue) -> Submission:
    """Evaluate again (after a failure or a metric version bump); existing scores are kept, new ones added."""
    submission = _admin_submission(session, admin, submission_id)
    if submission.status not in RERUNNABLE:
        raise Conflict(
            f"submission #{submission_id} cannot re-run ({_words(submission)}); only failed or scored ones do"
        )
    submission.error = None
    job = outbox.add(session, EVALUATE_SUBMISSION, submission_id)
    try:
        _move(session, admin, submission, SubmissionStatus.approved, "rerun")
    except IntegrityError as exc:  # a failed submission whose file its owner has since submitted again
        session.rollback()
        raise Conflict(f"submission #{submission_id}'s file was submitted again since; re-run that one") from exc
    _send(session, job, enqueue)
    return submission


def queue(session: Session, admin: User) -> list[Submission]:
    if not admin.is_admin:
        raise Forbidden("only admins can see the review queue")
    query = select(Submission).where(Submission.status == SubmissionStatus.submitted).order_by(Submission.id)
    return list(session.exec(query))
