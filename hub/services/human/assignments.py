"""Handing tasks to raters and taking their ratings back, safely under many concurrent raters.

- A task goes to at most `slots` raters at once: a rater claims a slot with one conditional UPDATE
  (`claimed < slots`), which the database serialises, so two raters can never both take the last slot.
- A rater gets a task at most once (unique task x rater), so nobody judges the same prompt of an experiment twice.
- An assignment not submitted within the experiment's timeout is released: its slot goes back to the task.
- Submitting inserts every rating and marks the assignment submitted in one transaction; a repeated submission
  (double click, retry after a lost response) is answered with the same completion code and writes nothing.
- Every change of state is a conditional UPDATE whose rowcount says whether this request won; a transaction that
  touches an existing assignment and its task locks the assignment row first, then the task row, so that two
  requests never wait on each other in a cycle (PostgreSQL would abort one of them as a deadlock).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

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
from hub.services.human import adaptive, rating_reasons
from hub.settings import get_settings

CHOICES = {TieMode.single: ("left", "tie", "right"), TieMode.split: ("left", "both_good", "both_bad", "right")}
DONE = (AssignmentStatus.submitted, AssignmentStatus.approved, AssignmentStatus.rejected)
SUBMIT_ATTEMPTS = 3  # a submission loses at most two races: to a release, then to its own duplicate
CANDIDATES = 20  # tasks read per round when looking for a free slot


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
    """Give the slots of timed-out assignments back to their tasks, one short transaction each (so this never
    holds one task's lock while it waits for another assignment's). Returns how many were released."""
    now = utcnow()
    stale = session.exec(
        select(Assignment.id, Assignment.task_id).where(
            Assignment.experiment_id == experiment_id,
            Assignment.status == AssignmentStatus.active,
            col(Assignment.expires_at) < now,
        )
    ).all()
    if not stale:  # the common case: no write, and the caller's loaded rows stay fresh
        return 0
    session.commit()  # end the read before the releases, each in its own transaction
    return sum(_release(session, assignment_id, task_id, now) for assignment_id, task_id in stale)


def _release(session: Session, assignment_id: int, task_id: int, now: datetime) -> bool:
    """Release one assignment unless a racing request (its late submission, another release) changed it first."""
    moved = session.execute(
        update(Assignment)
        .where(
            col(Assignment.id) == assignment_id,
            col(Assignment.status) == AssignmentStatus.active,
            col(Assignment.expires_at) < now,
        )
        .values(status=AssignmentStatus.released)
    ).rowcount
    if moved:
        session.execute(update(Task).where(col(Task.id) == task_id).values(claimed=Task.claimed - 1))
    session.commit()
    return bool(moved)


def _take_slot(session: Session, task_id: int) -> bool:
    taken = session.execute(
        update(Task)
        .where(col(Task.id) == task_id, col(Task.claimed) < col(Task.slots))
        .values(claimed=Task.claimed + 1)
    ).rowcount
    return bool(taken)


class NewAssignment(NamedTuple):
    experiment_id: int
    rater_id: int
    timeout_minutes: int
    external_assignment_id: str | None


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
    # Plain values: every failed try rolls back, which would expire the ORM objects and reload them each time.
    new = NewAssignment(experiment.id, rater.id, experiment.task_timeout_minutes, external_assignment_id)
    if task is not None:
        return _assign(session, task.id, new)
    tried: set[int] = set()
    released = experiment.released_tasks  # adaptive experiments open their tasks in rounds
    # First a free task no other claim holds right now (SKIP LOCKED on PostgreSQL), locked until this claim commits:
    # racing raters spread over the tasks instead of queueing on one task row behind a claim whose thread is slow.
    while (task_id := _unlocked_free_task(session, new, tried, released)) is not None:
        tried.add(task_id)
        assignment = _assign(session, task_id, new)
        if assignment is not None:
            return assignment
    # Then the tasks other claims hold, waiting for them: racing raters may fill every task of a round first, so
    # read the next free ones until none is left.
    while candidates := _free_tasks(session, new.experiment_id, new.rater_id, tried, released):
        for task_id in candidates:
            tried.add(task_id)
            assignment = _assign(session, task_id, new)
            if assignment is not None:
                return assignment
    return None


def _free_tasks_query(experiment_id: int, rater_id: int, tried: set[int], released: int | None):
    """Released tasks with a free slot that the rater has not done and this claim has not tried yet (`released`: only
    tasks with a lower index; None: all), started ones first."""
    done = select(Assignment.task_id).where(Assignment.rater_id == rater_id, Assignment.experiment_id == experiment_id)
    query = (
        select(Task.id)
        .where(Task.experiment_id == experiment_id, col(Task.claimed) < col(Task.slots), col(Task.id).not_in(done))
        .order_by(col(Task.claimed).desc(), col(Task.index))  # finish started tasks first
    )
    if tried:
        query = query.where(col(Task.id).not_in(tried))
    if released is not None:
        query = query.where(col(Task.index) < released)
    return query


def _free_tasks(
    session: Session, experiment_id: int, rater_id: int, tried: set[int], released: int | None
) -> list[int]:
    """Up to CANDIDATES free tasks (see _free_tasks_query), locked or not."""
    return list(session.exec(_free_tasks_query(experiment_id, rater_id, tried, released).limit(CANDIDATES)))


def _unlocked_free_task(session: Session, new: NewAssignment, tried: set[int], released: int | None) -> int | None:
    """The first free task that no other transaction has locked, now locked by this one (SQLite: the first free)."""
    query = _free_tasks_query(new.experiment_id, new.rater_id, tried, released)
    task_id = session.exec(query.limit(1).with_for_update(skip_locked=True, of=Task)).first()
    if task_id is None:
        session.rollback()  # end the read: the waiting search comes next, in its own transactions
    return task_id


def _assign(session: Session, task_id: int, new: NewAssignment) -> Assignment | None:
    """A new assignment on the task if a slot is free, in one transaction; None (nothing written) if not."""
    if not _take_slot(session, task_id):
        session.rollback()
        return None
    assignment = Assignment(
        experiment_id=new.experiment_id,
        task_id=task_id,
        rater_id=new.rater_id,
        external_assignment_id=new.external_assignment_id,
        expires_at=utcnow() + timedelta(minutes=new.timeout_minutes),
    )
    session.add(assignment)
    try:
        session.commit()
    except IntegrityError:  # this rater already had this task (a racing second tab): slot not taken
        session.rollback()
        return None
    session.refresh(assignment)
    return assignment


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


def submit(
    session: Session, assignment: Assignment, choices: dict[int, str], reasons: dict[int, str] | None = None
) -> Assignment:
    """Store one rater's answers for a whole task, all or nothing. Returns the assignment with its completion code.

    A racing request (the same submission twice at once, a release of the timed-out assignment) can change the
    assignment between loading it and storing: the attempt then writes nothing and looks at the assignment again."""
    experiment = session.get(Experiment, assignment.experiment_id)
    if experiment is None:
        raise NotFound(f"no experiment #{assignment.experiment_id}")
    items = task_items(session, assignment.task_id)
    choices = _checked_choices(items, choices, experiment.tie_mode)
    reasons = rating_reasons.checked_reasons(experiment, items, reasons)  # free text, when the study asks
    for _ in range(SUBMIT_ATTEMPTS):
        if assignment.status in DONE:
            if _same_answers(session, assignment, choices):
                return assignment  # the same submission again: same code, nothing written
            raise Conflict("this task was already submitted with different answers")
        if experiment.status != ExperimentStatus.open:
            raise Conflict(f"experiment #{experiment.id} is closed: it takes no more ratings")
        if _store(session, experiment, assignment, items, choices, reasons):
            session.refresh(assignment)
            if experiment.released_tasks is not None:  # adaptive: the next round, or the stop, once this one is done
                adaptive.advance(session, experiment.id)
            return assignment
        session.refresh(assignment)
    raise Conflict("this task is being submitted by another request at the same moment; try again in a moment")


def _store(
    session: Session,
    experiment: Experiment,
    assignment: Assignment,
    items: list[ExperimentItem],
    choices: dict[int, str],
    reasons: dict[int, str],
) -> bool:
    """One attempt at storing the answers, in one transaction. False (rolled back) when a racing request changed the
    assignment first; Conflict when it timed out and its task has no free slot any more."""
    if assignment.status == AssignmentStatus.released and not _reclaim(session, assignment):
        session.rollback()
        return False
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
    if not moved:  # released, or submitted by a racing duplicate of this very submission
        session.rollback()
        return False
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
    rating_reasons.add_reasons(session, assignment, reasons, now)
    session.execute(update(Task).where(col(Task.id) == assignment.task_id).values(completed=Task.completed + 1))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _reclaim(session: Session, assignment: Assignment) -> bool:
    """A released assignment submitted late keeps its work if its task still has a free slot: it goes back to active
    and takes the slot in the caller's transaction (assignment row first, then the task row, as everywhere else).
    False when a racing request moved it first; Conflict (rolled back) when no slot is free."""
    moved = session.execute(
        update(Assignment)
        .where(col(Assignment.id) == assignment.id, col(Assignment.status) == AssignmentStatus.released)
        .values(status=AssignmentStatus.active)
    ).rowcount
    if not moved:
        return False
    if not _take_slot(session, assignment.task_id):
        session.rollback()
        raise Conflict("this task timed out and went to another rater; open the link again for a new one")
    return True
