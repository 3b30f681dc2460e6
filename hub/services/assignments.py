"""Handing tasks to raters and taking their ratings back, safely under many concurrent raters.

- A task goes to at most `slots` raters at once: a rater claims a slot with one conditional UPDATE
  (`claimed < slots`), which the database serialises, so two raters can never both take the last slot.
- A rater gets a task at most once (unique task x rater), so nobody judges the same prompt of an experiment twice.
- An assignment not submitted within the experiment's timeout is released: its slot goes back to the task.
- Submitting inserts every rating and marks the assignment submitted in one transaction; a repeated submission
  (double click, retry after a lost response) is answered with the same completion code and writes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import (
    Assignment,
    AssignmentStatus,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    Rater,
    Rating,
    Task,
    TieMode,
)
from hub.models.common import utcnow
from hub.settings import get_settings

CHOICES = {TieMode.single: ("left", "tie", "right"), TieMode.split: ("left", "both_good", "both_bad", "right")}
DONE = (AssignmentStatus.submitted, AssignmentStatus.approved, AssignmentStatus.rejected)


def assignment_key(assignment: Assignment) -> str:
    """The secret a rating page submits an assignment with: derived (HMAC under the hub's secret key), so a page
    can be rendered again after a reload without storing it, and nobody can forge it for another assignment."""
    message = f"assignment:{assignment.id}:{assignment.rater_id}:{assignment.task_id}".encode()
    return hmac.new(get_settings().secret_key.encode(), message, hashlib.sha256).hexdigest()[:32]


def outcome_of(choice: str, left_is_a: bool) -> str:
    """What a choice of side means for the systems: A, B or tie (both good and both bad are ties)."""
    if choice == "left":
        return "A" if left_is_a else "B"
    if choice == "right":
        return "B" if left_is_a else "A"
    return "tie"


def release_expired(session: Session, experiment_id: int) -> int:
    """Give the slots of timed-out assignments back to their tasks. Returns how many were released."""
    now = utcnow()
    stale = session.exec(
        select(Assignment).where(
            Assignment.experiment_id == experiment_id,
            Assignment.status == AssignmentStatus.active,
            col(Assignment.expires_at) < now,
        )
    ).all()
    released = 0
    for assignment in stale:
        moved = session.execute(
            update(Assignment)
            .where(col(Assignment.id) == assignment.id, col(Assignment.status) == AssignmentStatus.active)
            .values(status=AssignmentStatus.released)
        ).rowcount
        if moved:
            session.execute(update(Task).where(col(Task.id) == assignment.task_id).values(claimed=Task.claimed - 1))
            released += 1
    session.commit()
    return released


def _take_slot(session: Session, task_id: int) -> bool:
    taken = session.execute(
        update(Task)
        .where(col(Task.id) == task_id, col(Task.claimed) < col(Task.slots))
        .values(claimed=Task.claimed + 1)
    ).rowcount
    return bool(taken)


def claim_task(
    session: Session,
    experiment: Experiment,
    rater: Rater,
    *,
    task: Task | None = None,
    external_assignment_id: str | None = None,
) -> Assignment | None:
    """The rater's unfinished assignment in this experiment, else a new one on a task with a free slot they have
    not done (or on `task`, for MTurk, where the HIT names the task). None when nothing is left for them."""
    if experiment.status != ExperimentStatus.open:
        raise Conflict(f"experiment #{experiment.id} is {experiment.status}: it takes no ratings")
    if rater.excluded:
        raise Forbidden("this rater no longer takes part in the hub's evaluations")
    release_expired(session, experiment.id)
    active = session.exec(
        select(Assignment).where(
            Assignment.experiment_id == experiment.id,
            Assignment.rater_id == rater.id,
            Assignment.status == AssignmentStatus.active,
        )
    ).first()
    if active is not None and (task is None or active.task_id == task.id):
        return active
    done = select(Assignment.task_id).where(Assignment.rater_id == rater.id, Assignment.experiment_id == experiment.id)
    if task is not None:
        candidates = [task]
    else:
        candidates = list(
            session.exec(
                select(Task)
                .where(
                    Task.experiment_id == experiment.id, col(Task.claimed) < col(Task.slots), col(Task.id).not_in(done)
                )
                .order_by(col(Task.claimed).desc(), col(Task.index))  # finish started tasks first
                .limit(20)
            )
        )
    for candidate in candidates:
        if not _take_slot(session, candidate.id):
            session.rollback()
            continue
        assignment = Assignment(
            experiment_id=experiment.id,
            task_id=candidate.id,
            rater_id=rater.id,
            external_assignment_id=external_assignment_id,
            expires_at=utcnow() + timedelta(minutes=experiment.task_timeout_minutes),
        )
        session.add(assignment)
        try:
            session.commit()
        except IntegrityError:  # this rater already had this task (a racing second tab): slot not taken
            session.rollback()
            continue
        session.refresh(assignment)
        return assignment
    return None


def task_items(session: Session, task_id: int) -> list[ExperimentItem]:
    return list(
        session.exec(
            select(ExperimentItem).where(ExperimentItem.task_id == task_id).order_by(col(ExperimentItem.position))
        )
    )


def assignment_for_key(session: Session, assignment_id: int, key: str) -> Assignment:
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or not hmac.compare_digest(assignment_key(assignment).encode(), key.encode()):
        raise Forbidden(f"assignment #{assignment_id} does not belong to this link")
    return assignment


def _checked_choices(items: list[ExperimentItem], choices: dict[int, str], tie_mode: TieMode) -> dict[int, str]:
    allowed = CHOICES[tie_mode]
    ids = {item.id for item in items}
    forged = sorted(set(choices) - ids)
    if forged:
        raise UnprocessableInput(f"item {forged[0]} is not part of this task", field=f"choice_{forged[0]}")
    missing = [item.id for item in items if item.id not in choices]
    if missing:
        raise UnprocessableInput(
            f"{len(missing)} pair(s) not answered, first item {missing[0]}", field=f"choice_{missing[0]}"
        )
    for item_id, choice in choices.items():
        if choice not in allowed:
            raise UnprocessableInput(
                f"choice must be one of {', '.join(allowed)}, not {choice!r}", field=f"choice_{item_id}"
            )
    return choices


def _same_answers(session: Session, assignment: Assignment, choices: dict[int, str]) -> bool:
    stored = session.exec(select(Rating.item_id, Rating.choice).where(Rating.assignment_id == assignment.id)).all()
    return dict(stored) == choices


def submit(session: Session, assignment: Assignment, choices: dict[int, str]) -> Assignment:
    """Store one rater's answers for a whole task, all or nothing. Returns the assignment with its completion code."""
    experiment = session.get(Experiment, assignment.experiment_id)
    if experiment is None:
        raise NotFound(f"no experiment #{assignment.experiment_id}")
    items = task_items(session, assignment.task_id)
    choices = _checked_choices(items, choices, experiment.tie_mode)
    if assignment.status in DONE:
        if _same_answers(session, assignment, choices):
            return assignment  # the same submission again: same code, nothing written
        raise Conflict("this task was already submitted with different answers")
    if experiment.status != ExperimentStatus.open:
        raise Conflict(f"experiment #{experiment.id} is closed: it takes no more ratings")
    if assignment.status == AssignmentStatus.released and not _reclaim(session, assignment):
        raise Conflict("this task timed out and went to another rater; open the link again for a new one")
    now = utcnow()
    moved = session.execute(
        update(Assignment)
        .where(col(Assignment.id) == assignment.id, col(Assignment.status) == AssignmentStatus.active)
        .values(
            status=AssignmentStatus.submitted,
            submitted_at=now,
            seconds_on_task=(now - _aware(assignment.started_at)).total_seconds(),
            completion_code=secrets.token_hex(5).upper(),
        )
    ).rowcount
    if not moved:  # a racing duplicate of this very submission won
        session.rollback()
        session.refresh(assignment)
        return submit(session, assignment, choices)
    for item in items:
        session.add(
            Rating(
                experiment_id=experiment.id,
                item_id=item.id,
                assignment_id=assignment.id,
                rater_id=assignment.rater_id,
                choice=choices[item.id],
                outcome=outcome_of(choices[item.id], bool(item.left_is_a)),
                created_at=now,
            )
        )
    session.execute(update(Task).where(col(Task.id) == assignment.task_id).values(completed=Task.completed + 1))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        session.refresh(assignment)
        return submit(session, assignment, choices)
    session.refresh(assignment)
    return assignment


def _aware(moment):
    from datetime import UTC

    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _reclaim(session: Session, assignment: Assignment) -> bool:
    """A released assignment submitted late keeps its work if its task still has a free slot."""
    if not _take_slot(session, assignment.task_id):
        session.rollback()
        return False
    session.execute(
        update(Assignment)
        .where(col(Assignment.id) == assignment.id, col(Assignment.status) == AssignmentStatus.released)
        .values(status=AssignmentStatus.active)
    )
    session.commit()
    session.refresh(assignment)
    return True
