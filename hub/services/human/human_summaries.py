"""Human evaluation results in summary form, for the pages that list many experiments at once: the experiment list,
system profiles and leaderboards.

The numbers are the experiment page's own (`experiment_results.results`: judgements of real pairs by raters not
excluded, automatic ties included, through the toolkit's `summarize`), computed from one grouped count per
experiment and rater instead of every rating row. Only experiments the viewer may see (`can_view_experiment`) appear.
Judgements of raters the screening flagged are held out until an admin decides (`screening.held_out_raters`),
and the numbers of an experiment that is not closed carry `provisional: true` (a pooled leaderboard cell when any of
its experiments is).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

import numpy as np
from sqlalchemy import func, or_
from sqlmodel import Session, col, select

from evaluation.pairwise_results import PairwiseSummary, summarize
from hub.models import Experiment, ExperimentItem, ExperimentStatus, ItemKind, Rater, Rating, System, Task, User
from hub.services.human.experiment_access import experiment_is_public, visible_experiments
from hub.services.human.experiment_results import experiment_json, is_provisional
from hub.services.human.screening import held_out_raters
from hub.services.platform.pagination import PageRequest, paginate

HELD_OUT = "held_out"  # the key, in Counts, of the judgements held out (flagged raters awaiting a decision)
FLIP = {"A": "B", "B": "A", "tie": "tie", HELD_OUT: HELD_OUT}
Counts = dict[str, int]


def outcome_counts(session: Session, experiment_ids: list[int]) -> dict[int, Counts]:
    """Per experiment, how many kept judgements of real pairs said A, B or tie (what its page summarises), and
    under HELD_OUT how many were held out."""
    counts: dict[int, Counts] = defaultdict(dict)
    if not experiment_ids:
        return counts
    held_out = held_out_raters(session, experiment_ids)
    query = (
        select(Rating.experiment_id, Rating.rater_id, Rating.outcome, func.count())
        .join(ExperimentItem, col(ExperimentItem.id) == col(Rating.item_id))
        .outerjoin(Rater, col(Rater.id) == col(Rating.rater_id))
        .where(
            col(Rating.experiment_id).in_(experiment_ids),
            ExperimentItem.kind == ItemKind.pair,
            or_(col(Rater.id).is_(None), ~col(Rater.excluded)),
        )
        .group_by(col(Rating.experiment_id), col(Rating.rater_id), col(Rating.outcome))
    )
    for experiment_id, rater_id, outcome, count in session.exec(query):
        key = HELD_OUT if rater_id in held_out.get(experiment_id, ()) else outcome
        counts[experiment_id][key] = counts[experiment_id].get(key, 0) + count
    return counts


def summary(counts: Counts, *, for_b: bool = False, provisional: bool = False) -> dict[str, Any]:
    """`summarize` of these outcomes, from system A's side, or from B's when `for_b` (A and B swapped), with
    whether the numbers are provisional and how many judgements were held out."""
    won, lost = ("B", "A") if for_b else ("A", "B")
    summarized = _summarized(counts.get(won, 0), counts.get("tie", 0), counts.get(lost, 0)).to_dict()
    return {**summarized, "provisional": provisional, "held_out_judgements": counts.get(HELD_OUT, 0)}


@functools.lru_cache(maxsize=8192)
def _summarized(wins: int, ties: int, losses: int) -> PairwiseSummary:
    """`summarize` of these counts (it depends on nothing else): kept, so the pages rebuilt after a write redo the
    exact tests and intervals (a few milliseconds each) only for the experiments whose counts changed."""
    return summarize(np.repeat(np.array([1, 0, -1]), [wins, ties, losses]))  # +1 = A better, 0 tie, -1 B better


def _progress(session: Session, experiment_ids: list[int]) -> dict[int, dict[str, int]]:
    query = (
        select(Task.experiment_id, func.count(), func.sum(Task.slots), func.sum(Task.completed))
        .where(col(Task.experiment_id).in_(experiment_ids))
        .group_by(col(Task.experiment_id))
    )
    return {
        experiment_id: {"tasks": tasks, "assignments_needed": needed or 0, "assignments_done": done or 0}
        for experiment_id, tasks, needed, done in session.exec(query)
    }


def _names(session: Session, experiments: list[Experiment]) -> dict[int, System]:
    ids = {e.system_a_id for e in experiments} | {e.system_b_id for e in experiments}
    return {s.id: s for s in session.exec(select(System).where(col(System.id).in_(ids)))} if ids else {}


def experiment_list(
    session: Session, viewer: User | None, *, dataset: str | None = None, page: PageRequest | None = None
) -> dict[str, Any]:
    """One page of the experiments the viewer may see (newest first), optionally of one dataset, with their
    progress and summary (`pagination` says which page); and the datasets that have any, for the filter."""
    visible = visible_experiments(session, viewer)
    matching = [e for e in visible if dataset is None or e.dataset_name == dataset]
    pagination = paginate(len(matching), page)
    chosen = matching[pagination.start : pagination.stop]
    ids = [e.id for e in chosen]
    counts, progress, systems = outcome_counts(session, ids), _progress(session, ids), _names(session, chosen)
    rows = []
    for e in chosen:
        row = experiment_json(e, systems.get(e.system_a_id), systems.get(e.system_b_id))
        empty = {"tasks": 0, "assignments_needed": 0, "assignments_done": 0}
        rows.append(
            {
                **row,
                "progress": progress.get(e.id, empty),
                "summary": summary(counts.get(e.id, {}), provisional=is_provisional(e)),
            }
        )
    return {
        "dataset": dataset,
        "datasets": sorted({e.dataset_name for e in visible}),
        "experiments": rows,
        "pagination": pagination,
    }


def _launched_of(session: Session, system: System, viewer: User | None) -> list[Experiment]:
    return visible_experiments(
        session,
        viewer,
        or_(col(Experiment.system_a_id) == system.id, col(Experiment.system_b_id) == system.id),
        Experiment.status != ExperimentStatus.draft,
    )


def has_human_results(session: Session, system: System, viewer: User | None) -> bool:
    """Whether the viewer may see a launched experiment of `system` (so its profile has something to show)."""
    return bool(_launched_of(session, system, viewer))


def system_human(session: Session, system: System, viewer: User | None) -> list[dict[str, Any]]:
    """One row per launched experiment of `system` the viewer may see: the other system, and the results from
    `system`'s side (its wins are the other's losses)."""
    experiments = _launched_of(session, system, viewer)
    counts, systems = outcome_counts(session, [e.id for e in experiments]), _names(session, experiments)
    rows = []
    for e in experiments:
        for_b = e.system_b_id == system.id
        other = systems.get(e.system_a_id if for_b else e.system_b_id)
        rows.append(
            {
                "experiment_id": e.id,
                "title": e.title,
                "dataset": e.dataset_name,
                "status": e.status.value,
                "provisional": is_provisional(e),
                "is_public": experiment_is_public(session, e),
                "side": "B" if for_b else "A",
                "opponent": {
                    "id": other.id if other else None,
                    "name": other.name if other else None,
                    "is_baseline": bool(other and other.is_baseline),
                },
                "summary": summary(counts.get(e.id, {}), for_b=for_b, provisional=is_provisional(e)),
                "url": f"/experiments/{e.id}",
            }
        )
    return rows


def column_key(baseline_id: int) -> str:
    """The leaderboard's name for the column of human win rates against one baseline (also its `sort` value)."""
    return f"human:{baseline_id}"


def leaderboard_human(
    session: Session, dataset: str, experiments: list[Experiment], counts: dict[int, Counts], system_ids: list[int]
) -> tuple[list[dict[str, Any]], dict[int, dict[str, dict[str, Any]]]]:
    """Columns (one per baseline with launched `experiments` on `dataset` the viewer may see, newest first, with
    their outcome_counts) and, per system, a cell per column: its human win rate against that baseline, the
    judgements of all those experiments pooled."""
    systems = _names(session, experiments)
    pooled: dict[tuple[int, int], Counts] = defaultdict(lambda: defaultdict(int))
    sources: dict[tuple[int, int], list[int]] = defaultdict(list)
    provisional = {e.id for e in experiments if is_provisional(e)}
    for e in reversed(experiments):  # oldest first
        for mine, other, for_b in ((e.system_a_id, e.system_b_id, False), (e.system_b_id, e.system_a_id, True)):
            baseline = systems.get(other)
            if baseline is None or not baseline.is_baseline or mine not in system_ids:
                continue
            for outcome, n in counts.get(e.id, {}).items():
                pooled[mine, other][FLIP[outcome] if for_b else outcome] += n
            sources[mine, other].append(e.id)
    baselines = sorted({other for _, other in sources}, key=lambda i: (systems[i].name, i))
    columns = [
        {
            "key": column_key(b),
            "baseline_id": b,
            "baseline_name": systems[b].name,
            "label": f"human win rate vs {systems[b].name}",
            "higher_is_better": True,
            "signature": summary({})["signature"],
        }
        for b in baselines
    ]
    cells: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (mine, other), ids in sources.items():
        cells[mine][column_key(other)] = {
            **summary(dict(pooled[mine, other]), provisional=any(i in provisional for i in ids)),
            "experiment_ids": ids,
            "url": f"/experiments/{ids[0]}" if len(ids) == 1 else f"/experiments?{urlencode({'dataset': dataset})}",
        }
    return columns, cells
