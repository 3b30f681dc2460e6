"""Rows of the public `ratings` download: every rating of every public experiment, excluded raters included
(flagged, with the reason), held-out raters included (flagged `held_out`: the screening flagged them and no admin has
decided yet, so public numbers leave them out), automatic ties included (flagged). Raters appear only as salted
hashes. Nothing derived from raters' clients is published (no client hash, no burst count: they would link raters
from one client); the burst flag stays on the admin's screening table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlmodel import Session, col, select

from evaluation.judgements import RATINGS_EXPORT_FIELDS
from hub.models import Assignment, Experiment, ExperimentItem, Rater, Rating, System
from hub.services.human.experiment_access import experiment_is_public
from hub.services.human.screening import held_out_raters

BATCH = 500
FIELDS = RATINGS_EXPORT_FIELDS


def public_experiments(session: Session, dataset: str | None = None) -> list[Experiment]:
    query = select(Experiment).order_by(col(Experiment.id))
    if dataset is not None:
        query = query.where(Experiment.dataset_name == dataset)
    return [e for e in session.exec(query) if experiment_is_public(session, e)]


_COLUMNS = (
    Rating.id,
    Rating.choice,
    Rating.outcome,
    Rating.auto_tie,
    Rating.assignment_id,
    Rating.created_at,
    ExperimentItem.id,
    ExperimentItem.prompt_id,
    ExperimentItem.repeat_of_id,
    ExperimentItem.kind,
    ExperimentItem.left_is_a,
    ExperimentItem.expected,
    ExperimentItem.task_id,
    Rater.id,
    Rater.public_hash,
    Rater.backend,
    Rater.excluded,
    Rater.exclusion_reason,
    Assignment.external_assignment_id,
    Assignment.submitted_at,
    Assignment.seconds_on_task,
)


def _experiment_rows(session: Session, experiment: Experiment, names: dict[int, str]) -> Iterator[dict[str, Any]]:
    """The experiment's rows, read as plain columns (no ORM objects: the download has 100,000s of rows)."""
    held_out = held_out_raters(session, [experiment.id]).get(experiment.id, set())
    query = (
        select(*_COLUMNS)
        .join(ExperimentItem, col(ExperimentItem.id) == col(Rating.item_id))
        .outerjoin(Rater, col(Rater.id) == col(Rating.rater_id))
        .outerjoin(Assignment, col(Assignment.id) == col(Rating.assignment_id))
        .where(Rating.experiment_id == experiment.id)
        .order_by(col(Rating.id))
        .execution_options(yield_per=BATCH)
    )
    common = {
        "experiment_id": experiment.id,
        "dataset": experiment.dataset_name,
        "dataset_fingerprint": experiment.dataset_fingerprint,
        "system_a": names.get(experiment.system_a_id),
        "system_b": names.get(experiment.system_b_id),
        "system_a_id": experiment.system_a_id,
        "system_b_id": experiment.system_b_id,
    }
    no_rater_backend = experiment.backend.value
    for (
        rating_id,
        choice,
        outcome,
        auto_tie,
        assignment_id,
        created_at,
        item_id,
        prompt_id,
        repeat_of_id,
        kind,
        left_is_a,
        expected,
        task_id,
        rater_id,
        rater_hash,
        rater_backend,
        excluded,
        exclusion_reason,
        external_assignment_id,
        submitted_at,
        seconds_on_task,
    ) in session.execute(query):
        rated = rater_id is not None
        yield {
            "rating_id": rating_id,
            "experiment_id": common["experiment_id"],
            "dataset": common["dataset"],
            "dataset_fingerprint": common["dataset_fingerprint"],
            "prompt_id": prompt_id,
            "item_id": repeat_of_id or item_id,
            "item_kind": kind.value,
            "system_a": common["system_a"],
            "system_b": common["system_b"],
            "system_a_id": common["system_a_id"],
            "system_b_id": common["system_b_id"],
            "left": None if left_is_a is None or auto_tie else ("A" if left_is_a else "B"),
            "choice": choice,
            "outcome": outcome,
            "auto_tie": auto_tie,
            "expected": expected,
            "rater": rater_hash if rated else None,
            "backend": rater_backend if rated else no_rater_backend,
            "task_id": task_id,
            "assignment_id": assignment_id,
            "external_assignment_id": external_assignment_id,
            "created_at": created_at.isoformat(),
            "submitted_at": submitted_at.isoformat() if submitted_at else None,
            "seconds_on_task": seconds_on_task,
            "excluded": bool(rated and excluded),
            "exclusion_reason": exclusion_reason if rated and excluded else None,
            "held_out": rated and rater_id in held_out,
        }


def ratings_rows(session: Session, dataset: str | None = None) -> Iterator[dict[str, Any]]:
    """Every row of the download, or only those of one dataset's experiments."""
    names = {system_id: name for system_id, name in session.execute(select(System.id, System.name))}
    for experiment in public_experiments(session, dataset):
        yield from _experiment_rows(session, experiment, names)
