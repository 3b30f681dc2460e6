"""What an experiment found: wins, ties and losses with a win-rate interval and a sign test, inter-rater agreement
(Cohen's weighted kappa over rater pairs, Fleiss' kappa), with and without excluded raters, and rater screening.

The numbers come from the toolkit's functions on the same rows the ratings export publishes, so anyone can
reproduce them from the download (`scripts/analyze_ratings.py`).

Two rules keep unfinished or unchecked numbers from passing as final: an experiment that is not closed is
`provisional` (its numbers say so wherever they appear), and the judgements of a rater the automatic screening
flags (any flag, whichever rule raised it) are held out of the public numbers until an admin decides on the rater
(include or exclude: `raters.set_excluded`, audited, stamps `Rater.reviewed_at`). The ratings download still lists
every rating (it is the raw record) with `held_out: true` on those rows, and the dataset's IRT fit, made from it,
leaves them out like excluded rows.
Imported experiments (the original ChatEval's published votes) are kept as published.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, select

from hub.models import (
    Assignment,
    Backend,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    ItemKind,
    Rater,
    Rating,
    System,
    Task,
)
from hub.services import adaptive, raters
from hub.services.experiments import experiment_cost


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


def is_provisional(experiment: Experiment) -> bool:
    """An experiment's numbers are final only once it is closed (no more judgements accepted)."""
    return experiment.status != ExperimentStatus.closed


def screening(session: Session, judged: list[JudgedRating]) -> list[dict[str, Any]]:
    """Every rater's screening row (RaterQuality dicts): the toolkit's rules, then the hub's own flags (raters
    created in a burst from one client). Whatever adds a flag here also holds the rater's judgements out."""
    from evaluation.rater_quality import screen

    return raters.with_client_bursts(session, [q.to_dict() for q in screen(_rows(judged))])


def _held_out_of(experiment: Experiment, judged: list[JudgedRating], rows: list[dict[str, Any]]) -> set[int]:
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
        experiment_id: _held_out_of(experiments[experiment_id], rows, screening(session, rows))
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


def _summary_json(outcomes: list[str]) -> dict[str, Any]:
    from evaluation.pairwise_results import summarize

    return summarize(outcomes).to_dict()


def results(session: Session, experiment: Experiment, *, with_raters: bool = False) -> dict[str, Any]:
    """The experiment page's numbers. `with_raters` adds the per-rater screening table (admins only)."""
    from evaluation.agreement import agreement

    judged = judged_ratings(session, experiment.id)
    rater_rows = screening(session, judged)
    held_out = _held_out_of(experiment, judged, rater_rows)  # never in public numbers, not even "with excluded raters"
    pairs = [j for j in judged if j.item.kind == ItemKind.pair and not (j.rater is not None and j.rater.id in held_out)]
    kept = [j for j in pairs if j.rater is None or not j.rater.excluded]
    judged_pairs = [j for j in pairs if not j.rating.auto_tie and j.rater is not None]
    items = [j.item.id for j in judged_pairs]
    raters_ = [j.rater.public_hash for j in judged_pairs if j.rater is not None]
    labels = [j.rating.outcome for j in judged_pairs]
    excluded = {j.rater.public_hash for j in judged_pairs if j.rater is not None and j.rater.excluded}
    provisional = is_provisional(experiment)
    system_a, system_b = systems_of(session, experiment)
    tasks = session.exec(select(Task).where(Task.experiment_id == experiment.id)).all()
    view: dict[str, Any] = {
        "experiment": experiment_json(experiment, system_a, system_b),
        "cost": experiment_cost(session, experiment).as_dict(),
        "progress": {
            "tasks": len(tasks),
            "assignments_needed": sum(t.slots for t in tasks),
            "assignments_done": sum(t.completed for t in tasks),
            "auto_ties": sum(1 for j in pairs if j.rating.auto_tie),
        },
        "provisional": provisional,
        "summary": _summary_json([j.rating.outcome for j in kept]),
        "summary_all_raters": _summary_json([j.rating.outcome for j in pairs]),
        "agreement": agreement(items, raters_, labels, excluded=excluded or None).to_dict() if judged_pairs else None,
        "excluded_raters": len(excluded),
        "held_out": {
            "raters": len(held_out),
            "judgements": sum(
                1 for j in judged if j.item.kind == ItemKind.pair and j.rater is not None and j.rater.id in held_out
            ),
        },
        "adaptive": adaptive.summary(session, experiment),
    }
    if with_raters:
        view["raters"] = rater_rows
        view["held_out"]["rater_hashes"] = sorted(
            {j.rater.public_hash for j in judged if j.rater is not None and j.rater.id in held_out}
        )
    return view


def raters_of(session: Session, experiment_id: int) -> list[Rater]:
    query = (
        select(Rater).join(Rating, col(Rating.rater_id) == col(Rater.id)).where(Rating.experiment_id == experiment_id)
    )
    return list(session.exec(query.distinct()))


def systems_of(session: Session, experiment: Experiment) -> tuple[System | None, System | None]:
    return session.get(System, experiment.system_a_id), session.get(System, experiment.system_b_id)


def experiment_json(experiment: Experiment, system_a: System | None, system_b: System | None) -> dict[str, Any]:
    return {
        "id": experiment.id,
        "title": experiment.title,
        "dataset": experiment.dataset_name,
        "dataset_fingerprint": experiment.dataset_fingerprint,
        "system_a": {"id": experiment.system_a_id, "name": system_a.name if system_a else None},
        "system_b": {"id": experiment.system_b_id, "name": system_b.name if system_b else None},
        "backend": experiment.backend.value,
        "tie_mode": experiment.tie_mode.value,
        "status": experiment.status.value,
        "raters_per_prompt": experiment.raters_per_prompt,
        "prompts_per_task": experiment.prompts_per_task,
        "reward_usd": experiment.reward_microusd / 1_000_000,
        "fee_percent": experiment.fee_percent,
        "attention_checks_per_task": experiment.attention_checks_per_task,
        "repeats_per_task": experiment.repeats_per_task,
        "seed": experiment.seed,
        "created_at": experiment.created_at.isoformat(),
        "launched_at": experiment.launched_at.isoformat() if experiment.launched_at else None,
        "closed_at": experiment.closed_at.isoformat() if experiment.closed_at else None,
        "provisional": is_provisional(experiment),
    }
