"""Which judgements of an experiment count: its judged ratings, the rater screening (the toolkit's rules plus the
hub's own flags), and the raters held out of public numbers until an admin decides on them (see experiment_results)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, select

from hub.models import Assignment, Backend, Experiment, ExperimentItem, Rater, Rating
from hub.services.human import raters


@dataclass(frozen=True)
class JudgedRating:
    rating: Rating
    item: ExperimentItem
    rater: Rater | None
    assignment: Assignment | None


def judged_ratings(session: Session, experiment_id: int) -> list[JudgedRating]:
    return _judged_by_experiment(session, [experiment_id]).get(experiment_id, [])


def _judged_by_experiment(session: Session, experiment_ids: list[int]) -> dict[int, list[JudgedRating]]:
    query = (
        select(Rating, ExperimentItem, Rater, Assignment)
        .join(ExperimentItem, col(ExperimentItem.id) == col(Rating.item_id))
        .outerjoin(Rater, col(Rater.id) == col(Rating.rater_id))
        .outerjoin(Assignment, col(Assignment.id) == col(Rating.assignment_id))
        .where(col(Rating.experiment_id).in_(experiment_ids))
        .order_by(col(Rating.id))
    )
    judged: dict[int, list[JudgedRating]] = defaultdict(list)
    for row in session.exec(query):
        judged[row[0].experiment_id].append(JudgedRating(*row))
    return judged


def screening(session: Session, judged: list[JudgedRating]) -> list[dict[str, Any]]:
    """Every rater's screening row (RaterQuality dicts): the toolkit's rules, then the hub's own flags (raters
    created in a burst from one client). Whatever adds a flag here also holds the rater's judgements out."""
    from evaluation.rater_quality import screen

    return raters.with_client_bursts(session, [q.to_dict() for q in screen(_rows(judged))])


def held_out_of(experiment: Experiment, judged: list[JudgedRating], rows: list[dict[str, Any]]) -> set[int]:
    """Ids of the raters flagged in `rows` (the experiment's screening) on whom no admin has decided yet."""
    if experiment.backend == Backend.imported:  # published elsewhere long ago (the original ChatEval): kept as is
        return set()
    flagged = {quality["rater"] for quality in rows if quality["flags"]}
    return {
        j.rater.id
        for j in judged
        if j.rater is not None
        and j.rater.public_hash in flagged
        and j.rater.reviewed_at is None
        and not j.rater.excluded
    }


def held_out_raters(session: Session, experiment_ids: Iterable[int]) -> dict[int, set[int]]:
    """Per experiment, the ids of raters whose judgements stay out of public numbers: flagged by the automatic
    screening of that experiment and not yet decided on by an admin (an excluded rater is left out anyway).
    Imported experiments hold nothing out: their rows are not read."""
    ids = list(experiment_ids)
    if not ids:
        return {}
    query = select(Experiment).where(col(Experiment.id).in_(ids), Experiment.backend != Backend.imported)
    experiments = {e.id: e for e in session.exec(query)}
    if not experiments:
        return {}
    return {
        experiment_id: held_out_of(experiments[experiment_id], rows, screening(session, rows))
        for experiment_id, rows in _judged_by_experiment(session, list(experiments)).items()
    }


def _rows(judged: list[JudgedRating]) -> list:
    from evaluation.rater_quality import RatingRow

    rows = []
    for j in judged:
        if j.rating.auto_tie or j.rater is None:
            continue
        seconds = j.assignment.seconds_on_task if j.assignment is not None else None
        rows.append(
            RatingRow(
                item=j.item.repeat_of_id or j.item.id,
                rater=j.rater.public_hash,
                outcome=j.rating.outcome,
                kind=str(j.item.kind),
                choice=j.rating.choice,
                left="A" if j.item.left_is_a else ("B" if j.item.left_is_a is not None else None),
                expected=j.item.expected,
                task=j.assignment.task_id if j.assignment is not None else j.item.task_id,
                seconds_on_task=seconds,
                excluded=j.rater.excluded,
            )
        )
    return rows
