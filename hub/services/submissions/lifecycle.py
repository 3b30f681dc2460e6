"""A researcher's side of the lifecycle: their submissions with each status in words, withdrawing one, and changing
a system's public/private choice later; and the drafts waiting for an admin's launch. Both changes are audited.

Withdrawing keeps every row (scores, judgements) and moves the submission to `withdrawn`, a status with no public
results, so every public page, download and fit leaves it out (`RESULT_STATUSES`, `can_view`); its dataset's IRT fit
is refreshed by a job."""

from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub import queue
from hub.errors import Conflict, NotFound, QueueUnavailable
from hub.models import Experiment, ExperimentStatus, Submission, SubmissionStatus, System, User
from hub.models.common import utcnow
from hub.services.human.experiments import experiment_cost
from hub.services.notifications.status_words import experiment_words, submission_words
from hub.services.platform import audit
from hub.services.submissions.public_names import refuse_public_clash

WITHDRAWABLE = set(SubmissionStatus) - {SubmissionStatus.withdrawn}


def _refit_later(dataset_name: str) -> None:
    with contextlib.suppress(QueueUnavailable):  # else the periodic refit_all_irt job notices the change
        queue.enqueue_refit(dataset_name)


def submission_row(session: Session, submission: Submission, system: System) -> dict[str, Any]:
    """One submission as its owner sees it in lists: status in words and its experiments."""
    experiments = session.exec(
        select(Experiment).where(Experiment.submission_id == submission.id).order_by(col(Experiment.id))
    ).all()
    return {
        "id": submission.id,
        "system": {"id": system.id, "name": system.name, "is_public": system.is_public},
        "dataset": submission.dataset_name,
        "status": submission.status,
        "status_words": submission_words(submission.status).as_dict(),
        "review_reason": submission.review_reason,
        "error": submission.error,
        "created_at": submission.created_at.isoformat(),
        "updated_at": submission.updated_at.isoformat(),
        "experiments": [
            {"id": e.id, "status": e.status, "status_words": experiment_words(e.status).as_dict()} for e in experiments
        ],
        "can_withdraw": submission.status in WITHDRAWABLE,
    }


def my_submissions(session: Session, user: User) -> list[dict[str, Any]]:
    """Every submission of the user's systems, newest first (withdrawn ones included, marked)."""
    query = (
        select(Submission, System)
        .join(System, col(System.id) == col(Submission.system_id))
        .where(System.owner_id == user.id)
        .order_by(col(Submission.id).desc())
    )
    return [submission_row(session, submission, system) for submission, system in session.exec(query)]


def my_submission(session: Session, submission: Submission) -> dict[str, Any]:
    system = session.get(System, submission.system_id)
    assert system is not None
    return submission_row(session, submission, system)


def _own_submission(session: Session, user: User, submission_id: int) -> tuple[Submission, System]:
    submission = session.get(Submission, submission_id)
    system = session.get(System, submission.system_id) if submission else None
    if submission is None or system is None or system.owner_id != user.id:
        raise NotFound(f"no submission #{submission_id} of yours")
    return submission, system


def withdraw(session: Session, user: User, submission_id: int) -> Submission:
    """The owner takes a submission off every public page and download; its rows stay. Audited."""
    submission, _ = _own_submission(session, user, submission_id)
    if submission.status not in WITHDRAWABLE:
        raise Conflict(f"submission #{submission_id} is already withdrawn")
    previous = submission.status
    submission.status, submission.updated_at = SubmissionStatus.withdrawn, utcnow()
    session.add(submission)
    session.commit()
    audit.record(
        session,
        actor=user,
        action="withdraw_submission",
        target=f"submission #{submission_id}",
        detail={"from": previous, "to": SubmissionStatus.withdrawn},
    )
    _refit_later(submission.dataset_name)
    session.refresh(submission)
    return submission


def set_visibility(session: Session, user: User, system_id: int, *, public: bool) -> System:
    """The owner makes a system public or private after submitting. A public name must not look like another public
    system's (409). Audited; the datasets' IRT fits are refreshed."""
    system = session.get(System, system_id)
    if system is None or system.owner_id != user.id:
        raise NotFound(f"no system #{system_id} of yours")
    if system.is_public == public:
        return system
    if public:
        refuse_public_clash(session, system.name)
    system.is_public = public
    session.add(system)
    try:
        session.commit()
    except IntegrityError:  # a look-alike public name was taken meanwhile
        session.rollback()
        refuse_public_clash(session, system.name)
        raise
    audit.record(
        session,
        actor=user,
        action="change_visibility",
        target=f"system #{system_id}",
        detail={"from": "private" if public else "public", "to": "public" if public else "private"},
    )
    datasets = set(session.exec(select(Submission.dataset_name).where(Submission.system_id == system_id)))
    for dataset_name in sorted(datasets):
        _refit_later(dataset_name)
    session.refresh(system)
    return system


def drafts_waiting(session: Session) -> list[dict[str, Any]]:
    """Draft experiments an admin has not launched, oldest first, with their cost (the admin queue lists them)."""
    query = select(Experiment).where(Experiment.status == ExperimentStatus.draft).order_by(col(Experiment.id))
    rows = []
    for experiment in session.exec(query):
        submission = session.get(Submission, experiment.submission_id) if experiment.submission_id else None
        if submission is not None and submission.status == SubmissionStatus.withdrawn:
            continue
        system_a, system_b = session.get(System, experiment.system_a_id), session.get(System, experiment.system_b_id)
        rows.append(
            {
                "experiment": experiment,
                "system_a": system_a.name if system_a else f"#{experiment.system_a_id}",
                "system_b": system_b.name if system_b else f"#{experiment.system_b_id}",
                "submission_id": experiment.submission_id,
                "cost": experiment_cost(session, experiment),
                "words": experiment_words(experiment.status),
            }
        )
    return rows
