"""Rows of the public `ratings` download: every rating of every public experiment, excluded raters included
(flagged, with the reason), held-out raters included (flagged `held_out`: the screening flagged them and no admin has
decided yet, so public numbers leave them out), automatic ties included (flagged). Raters appear only as salted
hashes. Nothing derived from raters' clients is published (no client hash, no burst count: they would link raters
from one client); the burst flag stays on the admin's screening table."""

from __future__ import annotations

from collections.abc import Collection, Iterator
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


def rating_row(
    rating: Rating,
    item: ExperimentItem,
    rater: Rater | None,
    assignment: Assignment | None,
    experiment: Experiment,
    names: dict[int, str],
    held_out: Collection[int] = (),
) -> dict[str, Any]:
    """One row; `held_out` holds the ids of the experiment's raters held out (flagged, awaiting an admin)."""
    left = None if item.left_is_a is None or rating.auto_tie else ("A" if item.left_is_a else "B")
    return {
        "rating_id": rating.id,
        "experiment_id": experiment.id,
        "dataset": experiment.dataset_name,
        "dataset_fingerprint": experiment.dataset_fingerprint,
        "prompt_id": item.prompt_id,
        "item_id": item.repeat_of_id or item.id,
        "item_kind": item.kind.value,
        "system_a": names.get(experiment.system_a_id),
        "system_b": names.get(experiment.system_b_id),
        "system_a_id": experiment.system_a_id,
        "system_b_id": experiment.system_b_id,
        "left": left,
        "choice": rating.choice,
        "outcome": rating.outcome,
        "auto_tie": rating.auto_tie,
        "expected": item.expected,
        "rater": rater.public_hash if rater else None,
        "backend": rater.backend if rater else experiment.backend.value,
        "task_id": item.task_id,
        "assignment_id": rating.assignment_id,
        "external_assignment_id": assignment.external_assignment_id if assignment else None,
        "created_at": rating.created_at.isoformat(),
        "submitted_at": assignment.submitted_at.isoformat() if assignment and assignment.submitted_at else None,
        "seconds_on_task": assignment.seconds_on_task if assignment else None,
        "excluded": bool(rater and rater.excluded),
        "exclusion_reason": rater.exclusion_reason if rater and rater.excluded else None,
        "held_out": bool(rater and rater.id in held_out),
    }


def ratings_rows(session: Session, dataset: str | None = None) -> Iterator[dict[str, Any]]:
    """Every row of the download, or only those of one dataset's experiments."""
    names = {s.id: s.name for s in session.exec(select(System))}
    for experiment in public_experiments(session, dataset):
        held_out = held_out_raters(session, [experiment.id]).get(experiment.id, set())
        query = (
            select(Rating, ExperimentItem, Rater, Assignment)
            .join(ExperimentItem, col(ExperimentItem.id) == col(Rating.item_id))
            .outerjoin(Rater, col(Rater.id) == col(Rating.rater_id))
            .outerjoin(Assignment, col(Assignment.id) == col(Rating.assignment_id))
            .where(Rating.experiment_id == experiment.id)
            .order_by(col(Rating.id))
            .execution_options(yield_per=BATCH)
        )
        for rating, item, rater, assignment in session.exec(query):
            yield rating_row(rating, item, rater, assignment, experiment, names, held_out)
