"""A worker's side of a HIT: the rating page's task and assignment for them, where it posts, and blocking them."""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session, select

from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import Assignment, AssignmentStatus, Backend, Experiment, ExperimentStatus, Rater, Task
from hub.services.human.assignments import claim_task
from hub.services.human.mturk.client import AWS_ERRORS, FEEDBACK_MAX, MTurkError, error_code, with_backoff
from hub.services.human.raters import rater_for

# Where MTurk tells the page to post the finished assignment (`turkSubmitTo`): the worker site or its sandbox.
SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"


# --- the rating page ------------------------------------------------------------------------------------------


def find_task_for_hit(session: Session, experiment: Experiment, hit_id: str) -> Task:
    task = session.exec(select(Task).where(Task.experiment_id == experiment.id, Task.external_id == hit_id)).first()
    if task is None:
        raise NotFound(f"HIT {hit_id!r} is not part of experiment #{experiment.id} on this hub")
    return task


def claim_for_worker(
    session: Session, experiment: Experiment, task: Task, worker_id: str, assignment_id: str
) -> Assignment:
    """The worker's assignment of the HIT's task: the one they already have (the page reloaded, or the HIT was
    returned and accepted again: the newest MTurk assignment id is kept), else a new claim of a slot."""
    rater = rater_for(session, Backend.mturk.value, worker_id)
    existing = session.exec(
        select(Assignment).where(Assignment.task_id == task.id, Assignment.rater_id == rater.id)
    ).first()
    if existing is None:
        assignment = claim_task(session, experiment, rater, task=task, external_assignment_id=assignment_id)
        if assignment is None:
            raise Conflict("every place in this HIT is held by another worker right now; return it and try again later")
        return assignment
    if existing.status in (AssignmentStatus.active, AssignmentStatus.released):
        if experiment.status != ExperimentStatus.open:
            raise Conflict(f"experiment #{experiment.id} is {experiment.status}: it takes no ratings")
        if rater.excluded:
            raise Forbidden("this worker no longer takes part in the hub's evaluations")
        if existing.external_assignment_id != assignment_id:
            existing.external_assignment_id = assignment_id
            session.add(existing)
            session.commit()
            session.refresh(existing)
    return existing


def submit_url(turk_submit_to: str) -> str:
    """Where the finished page posts the assignment: `{turkSubmitTo}/mturk/externalSubmit`, only to MTurk."""
    base = turk_submit_to.rstrip("/")
    if base not in SUBMIT_HOSTS:
        raise UnprocessableInput(f"turkSubmitTo must be one of {', '.join(SUBMIT_HOSTS)}", field="turkSubmitTo")
    return f"{base}/mturk/externalSubmit"


# --- blocking -------------------------------------------------------------------------------------------------


def block_worker(client, rater: Rater, reason: str, *, sleep: Callable[[float], None] | None = None) -> None:
    """Block an excluded MTurk worker from all of this requester's HITs (pass as `set_excluded(block=...)`)."""
    if rater.backend != Backend.mturk.value:
        raise UnprocessableInput(f"rater {rater.public_hash} is a {rater.backend} rater, not a Mechanical Turk worker")
    reason = reason.strip() or "excluded by the study's quality checks"
    try:
        with_backoff(client.create_worker_block, sleep=sleep, WorkerId=rater.external_id, Reason=reason[:FEEDBACK_MAX])
    except AWS_ERRORS as exc:
        raise MTurkError(f"Mechanical Turk did not block the worker: {error_code(exc)}") from exc


def worker_blocker(client) -> Callable[[Rater, str], None]:
    """`block` for `raters.set_excluded`."""
    return lambda rater, reason: block_worker(client, rater, reason)
