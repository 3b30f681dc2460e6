"""Polling MTurk for submitted assignments: approve them, or reject an excluded worker's, and record the review.

An assignment is approved only when the hub holds its ratings (matched on MTurk's assignment id), and recorded as
approved, so a second poll approves nothing again. Workers are paid for work done: an excluded worker's assignment
is approved too, unless the experiment's `reject_excluded` option says otherwise. Assignments without ratings,
HITs the hub does not know and errors are counted and logged, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from hub.errors import HubError
from hub.models import Assignment, AssignmentStatus, Backend, Experiment, ExperimentStatus, Rater, Task
from hub.services.human.mturk.client import (
    AWS_ERRORS,
    FEEDBACK_MAX,
    error_code,
    mturk_client,
    mturk_options,
    turk_code,
    with_backoff,
)

log = logging.getLogger(__name__)


@dataclass
class PollReport:
    experiment_id: int
    hits: int = 0
    approved: int = 0
    rejected: int = 0
    synced: int = 0  # reviewed on MTurk itself (auto-approval, the requester website): recorded here
    already_reviewed: int = 0
    without_ratings: int = 0  # submitted on MTurk, but the hub holds no ratings for it: not approved
    unknown_hits: int = 0  # an assignment of a HIT this experiment does not know: ignored
    errors: int = 0
    messages: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _list_assignments(client, hit_id: str, sleep=None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"HITId": hit_id, "MaxResults": 100}
    while True:
        page = with_backoff(client.list_assignments_for_hit, sleep=sleep, **kwargs)
        found.extend(page.get("Assignments", []))
        if not page.get("NextToken") or not page.get("Assignments"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def _record(session: Session, assignment: Assignment, status: AssignmentStatus) -> bool:
    """Move a submitted assignment to approved/rejected; False when another poller got there first."""
    moved = session.execute(
        update(Assignment)
        .where(col(Assignment.id) == assignment.id, col(Assignment.status) == AssignmentStatus.submitted)
        .values(status=status)
    ).rowcount
    session.commit()
    return bool(moved)


def poll_experiment(
    session: Session, experiment: Experiment, client, *, sleep: Callable[[float], None] | None = None
) -> PollReport:
    """Review the submitted assignments of every HIT of the experiment. Safe to run again at any time."""
    report = PollReport(experiment_id=experiment.id or 0)
    options = mturk_options(experiment)
    tasks = session.exec(
        select(Task)
        .where(Task.experiment_id == experiment.id, col(Task.external_id).is_not(None))
        .order_by(col(Task.index))
    ).all()
    for task in tasks:
        reviewed = session.exec(
            select(Assignment.id).where(
                Assignment.task_id == task.id,
                col(Assignment.status).in_((AssignmentStatus.approved, AssignmentStatus.rejected)),
            )
        ).all()
        if len(reviewed) >= task.slots:
            continue  # every assignment MTurk can hold for this HIT is reviewed
        report.hits += 1
        try:
            listed = _list_assignments(client, str(task.external_id), sleep)
        except AWS_ERRORS as exc:
            report.errors += 1
            report.messages.append(f"HIT {task.external_id}: {error_code(exc)}")
            log.warning("experiment #%s: listing HIT %s failed: %s", experiment.id, task.external_id, error_code(exc))
            continue
        for listing in listed:
            _review(session, experiment, task, listing, options, client, report, sleep)
    log.info("polled MTurk for experiment #%s: %s", experiment.id, report.as_dict())
    return report


def _review(session, experiment, task, listing, options, client, report: PollReport, sleep) -> None:
    external_id, hit_id = listing.get("AssignmentId", ""), listing.get("HITId", task.external_id)
    if hit_id != task.external_id:
        report.unknown_hits += 1
        report.messages.append(f"assignment {external_id} of unknown HIT {hit_id}")
        log.warning("experiment #%s: assignment %s names unknown HIT %s", experiment.id, external_id, hit_id)
        return
    assignment = session.exec(
        select(Assignment).where(
            Assignment.external_assignment_id == external_id,
            Assignment.task_id == task.id,
            Assignment.experiment_id == experiment.id,
        )
    ).first()
    status = listing.get("AssignmentStatus")
    if assignment is None or assignment.status in (AssignmentStatus.active, AssignmentStatus.released):
        if status == "Submitted":
            report.without_ratings += 1
            report.messages.append(f"assignment {external_id} of HIT {hit_id}: no ratings on the hub, not approved")
            log.warning("experiment #%s: MTurk assignment %s has no ratings here", experiment.id, external_id)
        return
    if assignment.status != AssignmentStatus.submitted:
        report.already_reviewed += 1
        return
    if status in ("Approved", "Rejected"):  # reviewed on MTurk's side: auto-approval or the requester website
        target = AssignmentStatus.approved if status == "Approved" else AssignmentStatus.rejected
        report.synced += _record(session, assignment, target)
        return
    rater = session.get(Rater, assignment.rater_id)
    reject = options.reject_excluded and rater is not None and rater.excluded
    try:
        if reject:
            reason = (rater.exclusion_reason if rater else None) or "excluded by the study's quality checks"
            with_backoff(
                client.reject_assignment,
                sleep=sleep,
                AssignmentId=external_id,
                RequesterFeedback=reason[:FEEDBACK_MAX],
            )
        else:
            with_backoff(client.approve_assignment, sleep=sleep, AssignmentId=external_id)
    except AWS_ERRORS as exc:
        if "InvalidAssignmentState" in turk_code(exc):  # reviewed meanwhile; the next poll records how
            report.already_reviewed += 1
            return
        report.errors += 1
        report.messages.append(f"assignment {external_id}: {error_code(exc)}")
        log.warning("experiment #%s: reviewing %s failed: %s", experiment.id, external_id, error_code(exc))
        return
    if _record(session, assignment, AssignmentStatus.rejected if reject else AssignmentStatus.approved):
        if reject:
            report.rejected += 1
        else:
            report.approved += 1


def _experiments_to_poll(session: Session) -> list[Experiment]:
    """Open MTurk experiments, and closed ones that still have submitted assignments to review."""
    pending = select(Assignment.experiment_id).where(Assignment.status == AssignmentStatus.submitted)
    query = select(Experiment).where(
        Experiment.backend == Backend.mturk,
        (col(Experiment.status) == ExperimentStatus.open)
        | ((col(Experiment.status) == ExperimentStatus.closed) & col(Experiment.id).in_(pending)),
    )
    return list(session.exec(query.order_by(col(Experiment.id))))


def poll_open_experiments(engine: Engine, client_factory: Callable[[], Any] = mturk_client) -> int:
    """The periodic job: poll every MTurk experiment with work to review; returns assignments approved or
    rejected. No client is made (no AWS call) when there is nothing to poll."""
    reviewed = 0
    with Session(engine) as session:
        found = _experiments_to_poll(session)
        if not found:
            return 0
        client = client_factory()
        for experiment in found:
            try:
                report = poll_experiment(session, experiment, client)
            except HubError as exc:
                log.warning("experiment #%s not polled: %s", experiment.id, exc.message)
                continue
            reviewed += report.approved + report.rejected
    return reviewed
