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

from typing import Any

from sqlmodel import Session, col, select

from hub.models import (
    Experiment,
    ExperimentStatus,
    ItemKind,
    Rater,
    Rating,
    System,
    Task,
)
from hub.services.human import adaptive
from hub.services.human.experiments import experiment_cost
from hub.services.human.screening import held_out_of, judged_ratings, screening


def is_provisional(experiment: Experiment) -> bool:
    """An experiment's numbers are final only once it is closed (no more judgements accepted)."""
    return experiment.status != ExperimentStatus.closed


def _summary_json(outcomes: list[str]) -> dict[str, Any]:
    from evaluation.pairwise_results import summarize

    return summarize(outcomes).to_dict()


def results(session: Session, experiment: Experiment, *, with_raters: bool = False) -> dict[str, Any]:
    """The experiment page's numbers. `with_raters` adds the per-rater screening table (admins only)."""
    from evaluation.agreement import agreement

    judged = judged_ratings(session, experiment.id)
    rater_rows = screening(session, judged)
    held_out = held_out_of(experiment, judged, rater_rows)  # never in public numbers, not even "with excluded raters"
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
        "original_run": (experiment.settings or {}).get("run"),  # an imported ChatEval experiment's run id
    }
