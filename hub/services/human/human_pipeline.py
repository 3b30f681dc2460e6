"""The lifecycle after automatic scores: an evaluated submission that chose baselines gets one draft experiment
per baseline (`human_evaluation`); an admin reviews the cost and launches them; once all are closed the
submission is `complete`. Closing an experiment (`close`, `mark_closed`) lives here, since it moves that lifecycle on
and queues the dataset's IRT refit. Rater money is never spent without an admin's launch."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from hub import queue
from hub.errors import HubError
from hub.models import Experiment, ExperimentStatus, Submission, SubmissionStatus, User
from hub.models.common import utcnow
from hub.services.human import experiments
from hub.services.human.experiments import ExperimentForm, create_experiment
from hub.services.platform import audit
from hub.storage import Storage

log = logging.getLogger(__name__)


def plan_human_evaluation(engine: Engine, storage: Storage, submission_id: int) -> SubmissionStatus | None:
    """Draft an experiment against each chosen baseline; the new status, or None when there is nothing to plan."""
    with Session(engine) as session:
        submission = session.get(Submission, submission_id)
        if submission is None or submission.status != SubmissionStatus.evaluated or not submission.baseline_ids:
            return None
        planned = {
            e.system_b_id for e in session.exec(select(Experiment).where(Experiment.submission_id == submission_id))
        }
        created, problems = [], []
        for baseline_id in submission.baseline_ids:
            if baseline_id in planned:
                continue
            form = ExperimentForm(
                dataset=submission.dataset_name,
                system_a_id=submission.system_id,
                system_b_id=baseline_id,
                submission_id=submission.id,
            )
            try:
                created.append(create_experiment(session, None, form, storage).id)
            except HubError as exc:  # e.g. the baseline has no responses on this dataset
                problems.append(f"baseline #{baseline_id}: {exc.message}")
                log.warning("no experiment for submission %s vs baseline %s: %s", submission_id, baseline_id, exc)
        submission = session.get(Submission, submission_id)
        if not created and not planned:
            audit.record(
                session,
                actor=None,
                action="plan_human_evaluation",
                target=f"submission #{submission_id}",
                detail={"problems": problems},
            )
            return None
        submission.status, submission.updated_at = SubmissionStatus.human_evaluation, utcnow()
        session.add(submission)
        session.commit()
        audit.record(
            session,
            actor=None,
            action="plan_human_evaluation",
            target=f"submission #{submission_id}",
            detail={"experiments": created, "problems": problems},
        )
        return SubmissionStatus.human_evaluation


def complete_if_done(session: Session, experiment: Experiment) -> None:
    """Called when an experiment closes: its submission is `complete` once none of its experiments is open."""
    if experiment.submission_id is None:
        return
    submission = session.get(Submission, experiment.submission_id)
    if submission is None or submission.status != SubmissionStatus.human_evaluation:
        return
    unfinished = session.exec(
        select(Experiment.id).where(
            Experiment.submission_id == submission.id, col(Experiment.status) != ExperimentStatus.closed
        )
    ).first()
    if unfinished is None:
        submission.status, submission.updated_at = SubmissionStatus.complete, utcnow()
        session.add(submission)
        session.commit()


# --- closing: the lifecycle goes on --------------------------------------------------------------------


def close(session: Session, admin: User, experiment_id: int) -> Experiment:
    experiment = experiments.admin_experiment(session, admin, experiment_id)
    mark_closed(session, experiment, actor=admin)
    session.refresh(experiment)
    return experiment


def mark_closed(
    session: Session, experiment: Experiment, *, actor: User | None, settings: dict[str, Any] | None = None
) -> bool:
    """Close the experiment once (a conditional update: of two racing closes one wins), with `settings` replacing
    its settings if given; then the lifecycle goes on: the submission may be complete, and the dataset's IRT fit is
    refreshed by a job. False when it was already closed."""
    values: dict[str, Any] = {"status": ExperimentStatus.closed, "closed_at": utcnow()}
    if settings is not None:
        values["settings"] = settings
    closed = session.exec(  # type: ignore[call-overload]
        update(Experiment)
        .where(col(Experiment.id) == experiment.id, col(Experiment.status) != ExperimentStatus.closed)
        .values(**values)
    )
    session.commit()
    if closed.rowcount != 1:
        return False
    audit.record(session, actor=actor, action="close_experiment", target=f"experiment #{experiment.id}")
    session.refresh(experiment)
    complete_if_done(session, experiment)
    queue.enqueue_refit(experiment.dataset_name)
    return True
