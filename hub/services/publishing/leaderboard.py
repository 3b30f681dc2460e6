"""Public read views as JSON-ready view-models: datasets, leaderboards, system profiles and comparisons.

Every view filters submissions through `can_view`, so a viewer sees exactly what the submission API shows them,
and a system the viewer may not see answers 404 with the same message as one that does not exist.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from sqlmodel import Session, col, select

from evaluation.dataset import Dataset, installed_dataset_dirs, load_dataset_dir
from evaluation.errors import EvaluationError
from hub.errors import BadRequest, NotFound
from hub.models import Score, Submission, System, User
from hub.services.human.human_summaries import has_human_results, leaderboard_human, outcome_counts, system_human
from hub.services.judging import views as judging
from hub.services.platform.datasets import installed_dataset
from hub.services.platform.pagination import PageRequest, paginate
from hub.services.publishing import column_choice
from hub.services.publishing import leaderboard_listing as listing
from hub.services.publishing.win_matrix import win_matrix
from hub.services.statistics.irt_views import FitCache, irt_cells, leaderboard_cells, statistics_index, system_irt
from hub.services.submissions.results import RESULT_STATUSES, finite
from hub.services.submissions.submissions import can_view

log = logging.getLogger(__name__)

LATEST_ON_OVERVIEW = 8
ORDERS = ("asc", "desc")
# What a leaderboard needs of a score; per-prompt values can be large and are left in the database.
SCORE_SUMMARY = (
    Score.id,
    Score.submission_id,
    Score.metric,
    Score.version,
    Score.signature,
    Score.corpus,
    Score.higher_is_better,
    Score.created_at,
)
MAX_NAME_FILTER = 100  # characters of a leaderboard's `q`


def dataset_json(dataset: Dataset) -> dict[str, Any]:
    manifest = dataset.manifest
    return {
        "name": manifest.name,
        "version": manifest.version,
        "fingerprint": dataset.fingerprint,
        "prompt_count": len(dataset),
        "description": manifest.description,
        "license": manifest.license,
        "citation": manifest.citation,
        "source": manifest.source,
        "prompts_sha256": manifest.prompts_sha256,
    }


def list_datasets() -> list[dict[str, Any]]:
    """Every installed dataset that loads; a damaged one is logged and left out rather than failing the list."""
    found = []
    for name, folder in sorted(installed_dataset_dirs().items()):
        try:
            found.append(dataset_json(load_dataset_dir(folder)))
        except EvaluationError as exc:
            log.error("installed dataset %s does not load: %s", name, exc.describe())
    return found


def dataset_detail(name: str, page: PageRequest | None = None) -> dict[str, Any]:
    """The dataset's manifest and one page of its prompts (`pagination` says which)."""
    dataset = installed_dataset(name)
    pagination = paginate(len(dataset.prompts), page)
    prompts = [
        {"id": p.id, "context": [t.model_dump() for t in p.context], "references": list(p.references)}
        for p in dataset.prompts[pagination.start : pagination.stop]
    ]
    return {**dataset_json(dataset), "prompts": prompts, "pagination": pagination}


def _latest_scores(session: Session, submission_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per submission and metric, the most recent score (highest id)."""
    latest: dict[int, dict[str, Any]] = defaultdict(dict)
    if not submission_ids:
        return latest
    query = select(*SCORE_SUMMARY).where(col(Score.submission_id).in_(submission_ids)).order_by(col(Score.id))
    for score in session.exec(query):
        latest[score.submission_id][score.metric] = score
    return latest


def _columns(latest: dict[int, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each metric shown, with the signatures of the values shown and its direction (from its newest score)."""
    columns: dict[str, dict[str, Any]] = {}
    newest: dict[str, int] = {}
    for scores in latest.values():
        for metric, score in scores.items():
            column = columns.setdefault(metric, {"metric": metric, "signatures": [], "higher_is_better": None})
            if score.signature not in column["signatures"]:
                column["signatures"].append(score.signature)
            if score.id > newest.get(metric, -1):
                newest[metric], column["higher_is_better"] = score.id, score.higher_is_better
    return dict(sorted(columns.items()))


def sort_value(row: dict[str, Any], key: str) -> float | None:
    """A leaderboard row's value in a column: a metric's latest score, a human win rate (`human:BASELINE_ID`) or
    the IRT ability (`irt`)."""
    if key in row.get("human", {}):
        return row["human"][key]["win_rate"]
    if key == "irt":
        return (row.get("irt") or {}).get("ability")
    if key in row.get("rubrics", {}) or key in row.get("judges", {}):  # rubric:ID@V mean score, judge:ID win rate
        cell = row.get("rubrics", {}).get(key) or row["judges"][key]
        return cell.get("score", cell.get("win_rate"))
    return row["scores"].get(key, {}).get("corpus")


def _sorted_rows(rows: list[dict[str, Any]], key: str, order: str) -> list[dict[str, Any]]:
    """Rows with a value for `key` in `order` (ties keep submission order), then rows without one."""
    present = [r for r in rows if sort_value(r, key) is not None]
    missing = [r for r in rows if sort_value(r, key) is None]
    present.sort(key=lambda r: sort_value(r, key), reverse=order == "desc")
    return present + missing


# What a leaderboard row needs of a submission and its system (System.id as `system_id`): the columns `can_view`
# reads and the row shows, without loading whole objects.
ENTRY_COLUMNS = (
    col(Submission.id),
    col(Submission.status),
    col(Submission.dataset_fingerprint),
    col(System.id).label("system_id"),
    col(System.name),
    col(System.is_baseline),
    col(System.is_public),
    col(System.owner_id),
)


def _visible_entries(session: Session, dataset_name: str, viewer: User | None) -> list[Any]:
    """The dataset's scored submissions the viewer may see, in submission order, each one row of ENTRY_COLUMNS
    (it has what `can_view` reads of both the submission and the system)."""
    query = (
        select(*ENTRY_COLUMNS)
        .join(System, col(System.id) == col(Submission.system_id))
        .where(Submission.dataset_name == dataset_name, col(Submission.status).in_(RESULT_STATUSES))
        .order_by(col(Submission.id))
    )
    return [entry for entry in session.exec(query) if can_view(entry, entry, viewer)]


def _entry_row(entry: Any, latest: dict[str, Any]) -> dict[str, Any]:
    """A scored leaderboard row: the entry with the latest score of each metric."""
    return {
        "submission_id": entry.id,
        "system_id": entry.system_id,
        "system_name": entry.name,
        "is_baseline": entry.is_baseline,
        "is_public": can_view(entry, entry, None),
        "status": entry.status,
        "dataset_fingerprint": entry.dataset_fingerprint,
        "scores": {
            metric: {"corpus": finite(score.corpus), "signature": score.signature, "version": score.version}
            for metric, score in sorted(latest.items())
        },
    }


def _scored_rows(session: Session, dataset: Dataset, viewer: User | None) -> tuple[list[dict[str, Any]], dict]:
    """One row per visible scored submission of the dataset with the latest score of each metric, in submission
    order; and those latest scores, by submission id."""
    visible = _visible_entries(session, dataset.name, viewer)
    latest = _latest_scores(session, [entry.id for entry in visible])
    return [_entry_row(entry, latest[entry.id]) for entry in visible], latest


def _listed(
    session: Session, dataset: Dataset, viewer: User | None
) -> tuple[list[dict[str, Any]], dict, tuple, tuple, tuple]:
    """Who the leaderboard lists: the scored entries and every public system with human or IRT results but none
    (empty score cells); with the latest scores, the human evidence (the launched experiments the viewer may see
    and their outcome counts, each read once), the pooled human results (listing.human_overall) and the IRT ones."""
    rows, latest = _scored_rows(session, dataset, viewer)
    experiments = listing.launched_experiments(session, dataset.name, viewer)
    counts = outcome_counts(session, [e.id for e in experiments])
    pooled = listing.human_overall(dataset.name, experiments, counts)
    irt = leaderboard_cells(session, dataset.name)
    rows += listing.result_only_rows(session, {*pooled[1], *irt[1]}, {row["system_id"] for row in rows})
    return rows, latest, (experiments, counts), pooled, irt


def leaderboard_rows(session: Session, dataset_name: str, viewer: User | None) -> list[dict[str, Any]]:
    """The leaderboard's entries with their automatic scores only (no human or IRT columns), in submission order:
    what the overview and the comparison page's system choices need."""
    return _scored_rows(session, installed_dataset(dataset_name), viewer)[0]


def leaderboard(
    session: Session,
    dataset_name: str,
    viewer: User | None,
    *,
    sort: str | None = None,
    order: str | None = None,
    q: str | None = None,
    columns: list[str] | None = None,
) -> dict[str, Any]:
    """One row per visible scored submission of the dataset, with the latest score of each metric, plus one per
    public system with only human or IRT results; under `human` its pooled human win rate (`human:all`) and its
    win rate against each baseline it was judged against (columns in `human_columns`) and under `irt` its ability
    in the dataset's newest IRT fit (the column in `irt_column`, None before any fit). By default sorted by the
    strongest published evidence (IRT ability, then human win rate); a dataset with neither is unranked (`sort`
    None, `ranked` False, rows by system name) until a column is asked for; a metric the dataset cannot have is a
    column with `unavailable` saying why. `q` keeps the systems whose name contains it (ignoring case); each row's
    `judgements` counts its published human judgements, and `updated_at` is the newest score shown. `columns`
    (column_choice) keeps only the chosen result columns; `rank` numbers the rows with a value in the sorted column;
    `win_matrix` is the human win rate of every two listed systems that were judged against each other."""

    dataset = installed_dataset(dataset_name)
    if order is not None and order not in ORDERS:
        raise BadRequest("order must be asc or desc", field="order")
    if q is not None and (len(q) > MAX_NAME_FILTER or not q.isprintable()):
        raise BadRequest(f"q (name filter) must be at most {MAX_NAME_FILTER} printable characters", field="q")
    chosen = column_choice.parse_columns(columns)
    rows, latest, (experiments, counts), pooled, irt = _listed(session, dataset, viewer)
    (pooled_column, pooled_cells, pairs), (irt_column, irt_cells) = pooled, irt
    system_ids = [row["system_id"] for row in rows]
    human_columns, human_cells = leaderboard_human(session, dataset.name, experiments, counts, system_ids)
    human_columns = [pooled_column, *human_columns] if pooled_column else human_columns
    rubric_columns, rubric_cells, judge_columns, judge_cells = judging.leaderboard_cells(
        session,
        dataset.name,
        [row["submission_id"] for row in rows if row["submission_id"] is not None],
        [row["system_id"] for row in rows],
    )
    for row in rows:
        pooled = {listing.HUMAN_ALL: pooled_cells[row["system_id"]]} if row["system_id"] in pooled_cells else {}
        row["human"] = {**pooled, **human_cells.get(row["system_id"], {})}
        row["irt"] = irt_cells.get(row["system_id"])
        row["rubrics"] = rubric_cells.get(row["submission_id"], {})
        row["judges"] = judge_cells.get(row["system_id"], {})
        row["judgements"] = pooled_cells[row["system_id"]]["n"] if row["system_id"] in pooled_cells else None
    needle = (q or "").strip().casefold()
    rows = [row for row in rows if needle in row["system_name"].casefold()]
    times = [score.created_at for scores in latest.values() for score in scores.values()]
    columns = _columns(latest)
    columns.update(listing.word_vector_columns(dataset.name, columns))  # which vectors, or why there are none
    ranked = listing.default_sort(irt_column, human_columns) is not None
    sort = sort or listing.default_sort(irt_column, human_columns)
    if sort is None:
        order = None
    elif order is None:
        extra = [*human_columns, *([irt_column] if irt_column else []), *rubric_columns, *judge_columns]
        higher = {**columns, **{c["key"]: c for c in extra}}.get(sort, {}).get("higher_is_better")
        order = "desc" if higher is True else "asc"
    rows = listing.by_name(rows) if sort is None else _sorted_rows(rows, sort, order or "asc")
    rank = 0
    for row in rows:
        has_value = sort_value(row, sort) is not None if sort else False
        rank += has_value
        row["rank"] = rank if has_value else None
    board = {
        "dataset": dataset_json(dataset),
        "sort": sort,
        "order": order,
        "columns": list(columns.values()),
        "human_columns": human_columns,
        "irt_column": irt_column,
        "rubric_columns": rubric_columns,  # LLM-judged rubrics: mean score and pass rate (hub.services.judging)
        "judge_columns": judge_columns,  # LLM pairwise judges: win rate, linking to the judge's report card
        "q": needle or None,
        "updated_at": max(times).isoformat() if times else None,
        "ranked": ranked,  # False: no human or IRT evidence, so the default order is by name, with no ranks
        "unranked_note": None if ranked else listing.UNRANKED_NOTE,
        "rows": rows,
        "win_matrix": win_matrix(pairs, rows),
    }
    return column_choice.apply_choice(board, chosen)


def visible_system(session: Session, system_id: int, viewer: User | None) -> tuple[System, list[Submission]]:
    """The system and its submissions the viewer may see; 404 as for a missing id when it has none to show (neither
    a submission nor a launched human evaluation, as for systems imported with the original ChatEval's votes)."""

    system = session.get(System, system_id)
    submissions: list[Submission] = []
    if system is not None:
        query = select(Submission).where(Submission.system_id == system.id).order_by(col(Submission.id))
        submissions = [s for s in session.exec(query) if can_view(s, system, viewer)]
    privileged = system is not None and viewer is not None and (viewer.is_admin or viewer.id == system.owner_id)
    shown = system is not None and (submissions or privileged or system.is_baseline)
    if system is None or not (shown or has_human_results(session, system, viewer)):
        raise NotFound(f"no system #{system_id}")
    return system, submissions


def _score_json(score: Score) -> dict[str, Any]:
    return {
        "metric": score.metric,
        "version": score.version,
        "signature": score.signature,
        "corpus": finite(score.corpus),
        "higher_is_better": score.higher_is_better,
        "created_at": score.created_at.isoformat(),
    }


def system_profile(session: Session, system_id: int, viewer: User | None) -> dict[str, Any]:
    """Metadata, every visible submission with all its scores (every metric version) and, under `human`, the
    results of every launched human evaluation of the system the viewer may see. No owner details."""

    system, submissions = visible_system(session, system_id, viewer)
    scores: dict[int, list[Score]] = defaultdict(list)
    if submissions:
        query = select(Score).where(col(Score.submission_id).in_([s.id for s in submissions])).order_by(col(Score.id))
        for score in session.exec(query):
            scores[score.submission_id].append(score)
    return {
        "id": system.id,
        "name": system.name,
        "description": system.description,
        "paper_url": system.paper_url,
        "code_url": system.code_url,
        "weights_url": system.weights_url,
        "is_baseline": system.is_baseline,
        "is_public": system.is_public or system.is_baseline,
        "created_at": system.created_at.isoformat(),
        "submissions": [
            {
                "id": s.id,
                "dataset": s.dataset_name,
                "dataset_fingerprint": s.dataset_fingerprint,
                "status": s.status,
                "is_public": can_view(s, system, None),
                "created_at": s.created_at.isoformat(),
                "scores": [_score_json(score) for score in scores[s.id]],
                "rubric_grades": judging.profile_grades(session, s),  # each graded response, with explanations
                "unavailable": listing.unavailable_metrics(s.dataset_name, {score.metric for score in scores[s.id]}),
            }
            for s in submissions
        ],
        "human": system_human(session, system, viewer),
        "irt": system_irt(session, system),
    }


def overview(session: Session, viewer: User | None) -> dict[str, Any]:
    """Datasets with their number of leaderboard entries (every system with any published result: automatic, human
    or IRT), the number of systems and the latest evaluated entries, all read through the leaderboards' own listing
    so the viewer sees exactly what those show them; and the published IRT fits. Each fit is read once; the latest
    entries' scores are the only scores read."""

    fits = FitCache(session)
    datasets, systems, scored = [], set(), []
    for dataset in list_datasets():
        name = dataset["name"]
        visible = _visible_entries(session, name, viewer)
        listed = {entry.system_id for entry in visible}
        irt_ids = set(irt_cells(fits.get(name))[1])
        human_ids = listing.human_system_ids(listing.launched_experiments(session, name, viewer))
        extra = listing.result_only_rows(session, {*human_ids, *irt_ids}, listed)
        datasets.append({**dataset, "entries": len(visible) + len(extra), "leaderboard_url": f"/leaderboards/{name}"})
        systems |= listed | {row["system_id"] for row in extra}
        scored.extend((entry, name) for entry in visible)
    scored.sort(key=lambda pair: -pair[0].id)
    shown = scored[:LATEST_ON_OVERVIEW]
    latest = _latest_scores(session, [entry.id for entry, _ in shown])
    return {
        "datasets": datasets,
        "system_count": len(systems),
        "latest": [{**_entry_row(entry, latest[entry.id]), "dataset": name} for entry, name in shown],
        "statistics": statistics_index(session, fits),
    }
