"""Who a leaderboard lists and in what order by default: every public system with any published result on the
dataset (automatic scores, human judgements or an IRT ability), the pooled human win rate of each, the metrics a
dataset cannot have (with the reason) and the default sort (the strongest published evidence first)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from sqlmodel import Session, col, select

from hub.models import Experiment, ExperimentStatus, System, User
from hub.services.human.experiment_access import visible_experiments
from hub.services.human.experiment_results import is_provisional
from hub.services.human.human_summaries import FLIP, Counts, summary
from hub.services.platform import word_vectors
from hub.services.publishing.win_matrix import Pair, pair_counts

HUMAN_ALL = "human:all"
UNRANKED_NOTE = "not ranked: no human or IRT results yet; sort by any column"


def launched_experiments(session: Session, dataset: str, viewer: User | None) -> list[Experiment]:
    """The launched (not draft) experiments on `dataset` the viewer may see, newest first: a leaderboard's human
    evidence."""
    return visible_experiments(
        session, viewer, Experiment.dataset_name == dataset, Experiment.status != ExperimentStatus.draft
    )


def human_overall(
    dataset: str, experiments: list[Experiment], counts: dict[int, Counts]
) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]], dict[Pair, Counts]]:
    """The column and, per system, its human win rate over the launched `experiments` on `dataset` the viewer may
    see (launched_experiments, with their outcome_counts), against whichever system it met (the original
    ChatEval's comparisons are between non-baselines); and the same judgements per pair of systems (for the
    win-rate matrix)."""
    if not experiments:
        return None, {}, {}
    pooled: dict[int, Counts] = defaultdict(lambda: defaultdict(int))
    sources: dict[int, list[int]] = defaultdict(list)
    provisional: set[int] = set()
    for e in experiments:
        for mine, for_b in ((e.system_a_id, False), (e.system_b_id, True)):
            for outcome, n in counts.get(e.id, {}).items():
                pooled[mine][FLIP[outcome] if for_b else outcome] += n
            sources[mine].append(e.id)
            if is_provisional(e):
                provisional.add(mine)
    column = {
        "key": HUMAN_ALL,
        "baseline_id": None,
        "baseline_name": "every system it was compared with",
        "label": "human win rate (all comparisons)",
        "higher_is_better": True,
        "signature": summary({})["signature"],
    }
    url = f"/experiments?{urlencode({'dataset': dataset})}"
    cells = {
        system_id: {
            **summary(dict(pooled[system_id]), provisional=system_id in provisional),
            "experiment_ids": ids,
            "url": f"/experiments/{ids[0]}" if len(ids) == 1 else url,
        }
        for system_id, ids in sources.items()
    }
    return column, cells, pair_counts(experiments, counts)


def human_system_ids(experiments: list[Experiment]) -> set[int]:
    """The systems `human_overall` has a cell for (both sides of every launched experiment), without counting
    their judgements."""
    return {system_id for e in experiments for system_id in (e.system_a_id, e.system_b_id)}


def result_only_rows(session: Session, system_ids: set[int], listed: set[int]) -> list[dict[str, Any]]:
    """Rows for public systems with human or IRT results but no visible scored submission (empty score cells)."""
    wanted = sorted(system_ids - listed)
    if not wanted:
        return []
    systems = session.exec(select(System).where(col(System.id).in_(wanted)).order_by(col(System.id)))
    return [
        {
            "submission_id": None,
            "system_id": system.id,
            "system_name": system.name,
            "is_baseline": system.is_baseline,
            "is_public": True,
            "status": None,
            "dataset_fingerprint": None,
            "scores": {},
        }
        for system in systems
        if system.is_public or system.is_baseline
    ]


def word_vector_columns(dataset: str, shown: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The embedding-average column labelled with the vectors that score it (`vectors`), or, when the dataset has
    none and no row has the metric, a column whose `unavailable` says why (never a silent gap)."""
    described = word_vectors.describe(dataset)
    if word_vectors.METRIC in shown:
        return {word_vectors.METRIC: {**shown[word_vectors.METRIC], "vectors": described["vectors"]}}
    if described["unavailable"] is None:
        return {}
    column = {"metric": word_vectors.METRIC, "signatures": [], "higher_is_better": True, "vectors": None}
    return {word_vectors.METRIC: {**column, "unavailable": described["unavailable"]}}


def default_sort(irt_column: dict[str, Any] | None, human_columns: list[dict[str, Any]]) -> str | None:
    """The strongest published evidence: the IRT ability, then the pooled human win rate; None when the dataset has
    neither (automatic scores alone rank nothing: a degenerate baseline can top any of them)."""
    if irt_column is not None:
        return str(irt_column["key"])
    pooled = [c for c in human_columns if c["key"] == HUMAN_ALL]
    if pooled or human_columns:
        return str((pooled or human_columns)[0]["key"])
    return None


def by_name(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An unranked board's order: system name (ignoring case), then submission date (id)."""
    return sorted(rows, key=lambda row: (row["system_name"].casefold(), row["submission_id"] or 0))


def unavailable_metrics(dataset: str, scored: set[str]) -> list[dict[str, str]]:
    """For a profile's submission: embedding-average with the reason it has no score (no vectors configured for
    the dataset, or scored before they were)."""
    if word_vectors.METRIC in scored:
        return []
    reason = word_vectors.unavailable_reason(dataset)
    if reason is None:
        reason = "scored before word vectors were configured for this dataset (an admin can re-run the evaluation)"
    return [{"metric": word_vectors.METRIC, "reason": reason}]
