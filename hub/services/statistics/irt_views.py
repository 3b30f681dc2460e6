"""Published IRT fits as view-models: a dataset's abilities and significant differences, prompt discriminations,
the IRT cells of a leaderboard and the significant results of a system profile.

A stored fit identifies the systems it saw by id (names are labels: two systems may share one). Only systems public
on the dataset now are shown (one withdrawn since the fit was made is left out, with its pairs), so a fit never
publishes more than the ratings download does. A fit stored before systems were identified by id is not shown; the
refit job replaces it (its digest includes the report version).
"""

from __future__ import annotations

import math
from typing import Any

from sqlmodel import Session, col, select

from hub.errors import HubError, NotFound
from hub.models import Experiment, ExperimentItem, IrtFit, System
from hub.services.human.experiment_access import experiment_is_public, public_experiment_ids
from hub.services.platform.datasets import installed_dataset
from hub.services.statistics.irt_fits import MIN_JUDGEMENTS, latest_fit

IRT_SORT_KEY = "irt"  # the leaderboard column of IRT abilities


def public_systems(session: Session, dataset_name: str) -> dict[int, System]:
    """Id -> system, for every system of a public experiment on the dataset (the systems a fit may show)."""
    query = (  # what public_experiment_ids reads of an experiment, without its stored options
        select(
            col(Experiment.id),
            col(Experiment.status),
            col(Experiment.dataset_name),
            col(Experiment.system_a_id),
            col(Experiment.system_b_id),
        )
        .where(Experiment.dataset_name == dataset_name)
        .order_by(col(Experiment.id))
    )
    experiments = list(session.exec(query))
    public = public_experiment_ids(session, experiments)
    ids = [i for e in experiments if e.id in public for i in (e.system_a_id, e.system_b_id)]
    systems = {s.id: s for s in session.exec(select(System).where(col(System.id).in_(set(ids))))} if ids else {}
    return {system_id: systems[system_id] for system_id in dict.fromkeys(ids) if system_id in systems}


def fitted_datasets(session: Session) -> list[str]:
    return sorted(set(session.exec(select(IrtFit.dataset_name))))


def _system_row(row: dict[str, Any], system: System) -> dict[str, Any]:
    return {**row, "system_id": system.id, "is_baseline": system.is_baseline, "url": f"/systems/{system.id}"}


def _better(pair: dict[str, Any]) -> dict[str, Any]:
    """The significantly better system of a pair (`better`: its name, `better_id`), both None when not separable."""
    if not pair["significant"] or pair["difference"] is None:
        return {"better": None, "better_id": None}
    side = "system_a" if pair["difference"] > 0 else "system_b"
    return {"better": pair[side], "better_id": pair[f"{side}_id"]}


def _labels(systems: list[dict[str, Any]]) -> dict[int, str]:
    """Id -> what pages show: the name, with the id where two shown systems share it (from before names had to be
    unique)."""
    counts: dict[str, int] = {}
    for row in systems:
        counts[row["system"]] = counts.get(row["system"], 0) + 1
    return {
        row["system_id"]: row["system"] if counts[row["system"]] == 1 else f"{row['system']} (#{row['system_id']})"
        for row in systems
    }


def _band(rank: int, of: int) -> str:
    """`high` for the top quarter of prompts by discrimination, `low` for the bottom quarter, else `average`."""
    if rank <= math.ceil(of / 4):
        return "high"
    return "low" if rank > of - of // 4 else "average"


PROMPT_TEXT_CHARS = 120  # of a prompt's last turn, in the IRT lists


def _prompt_texts(dataset_name: str) -> dict[str, str]:
    """Prompt id -> its last context turn, cut to PROMPT_TEXT_CHARS (empty when the dataset is not installed here,
    as for votes imported without their prompts)."""
    try:
        dataset = installed_dataset(dataset_name)
    except HubError:
        return {}
    last = {p.id: p.context[-1].content if p.context else "" for p in dataset.prompts}
    return {k: v if len(v) <= PROMPT_TEXT_CHARS else v[: PROMPT_TEXT_CHARS - 1] + "…" for k, v in last.items()}


def _with_text(texts: dict[str, str], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each prompt row with `text` (None for a prompt not in `texts`)."""
    return [{**row, "text": texts.get(row["prompt"])} for row in rows]


def published_fit(session: Session, dataset_name: str) -> dict[str, Any] | None:
    """The newest fit of the dataset, restricted to systems public now; None when the dataset has no fit yet."""
    fit = latest_fit(session, dataset_name)
    if fit is None or not fit.report:  # none yet, or superseded because too few public judgements are left
        return None
    report, shown = fit.report, public_systems(session, dataset_name)
    if "anchor_id" not in report:  # stored before systems were identified by id: waits for its refit
        return None
    systems = [_system_row(row, shown[row["system_id"]]) for row in report["systems"] if row["system_id"] in shown]
    label = _labels(systems)
    for row in systems:
        row["label"] = label[row["system_id"]]
    pairs = [
        {**p, **_better(p), "system_a_label": label[p["system_a_id"]], "system_b_label": label[p["system_b_id"]]}
        for p in report["pairs"]
        if p["system_a_id"] in shown and p["system_b_id"] in shown
    ]
    for pair in pairs:
        pair["better_label"] = label.get(pair["better_id"])
    texts = _prompt_texts(dataset_name)  # read once for the three prompt lists
    return {
        "fit_id": fit.id,
        "dataset": dataset_name,
        "fitted_at": fit.created_at.isoformat(),
        "signature": report["signature"],
        "signature_text": report["signature_text"],
        "anchor": report["anchor"],
        "anchor_id": report["anchor_id"],
        "tau": report["tau"],
        "tie_rate": report["tie_rate"],
        "human_tie_rate": report["human_tie_rate"],
        "n_judgements": report["n_judgements"],
        "n_auto_ties": report["n_auto_ties"],
        "converged": report["converged"],
        "systems": systems,
        "pairs": pairs,
        "prompts": _with_text(texts, report["prompts"]),
        "most_discriminating": _with_text(texts, report["most_discriminating"]),
        "least_discriminating": _with_text(texts, report["least_discriminating"]),
        "url": f"/irt/{dataset_name}",
    }


def dataset_irt(session: Session, dataset_name: str) -> dict[str, Any]:
    """The statistics page's view-model: 404 when the dataset has neither a fit nor an installed release."""
    fit = published_fit(session, dataset_name)
    if fit is None:
        try:
            installed_dataset(dataset_name)
        except HubError as exc:
            raise NotFound(f"no IRT fit for dataset {dataset_name!r}") from exc
    return {"dataset": dataset_name, "fit": fit, "min_judgements": MIN_JUDGEMENTS}


class FitCache:
    """`published_fit` of each dataset, read once per view-model build (the overview needs each fit for its
    leaderboard counts and its statistics list)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.fits: dict[str, dict[str, Any] | None] = {}

    def get(self, dataset_name: str) -> dict[str, Any] | None:
        if dataset_name not in self.fits:
            self.fits[dataset_name] = published_fit(self.session, dataset_name)
        return self.fits[dataset_name]


def irt_cells(fit: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]]]:
    """A published fit's summary for the leaderboard's column header and, per system id, its ability cell."""
    if fit is None:
        return None, {}
    header = {
        "key": IRT_SORT_KEY,
        "label": "IRT ability",
        "signature": fit["signature_text"],
        "anchor": fit["anchor"],
        "anchor_id": fit["anchor_id"],
        "url": fit["url"],
        "higher_is_better": True,
    }
    return header, {row["system_id"]: row for row in fit["systems"]}


def leaderboard_cells(session: Session, dataset_name: str) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]]]:
    """The newest fit's summary for the column header and, per system id, its ability cell."""
    return irt_cells(published_fit(session, dataset_name))


def _verdict(pair: dict[str, Any], system_id: int) -> dict[str, Any]:
    """A pair from one system's side: the difference (its ability minus the other's) and whether it is significant."""
    flip = pair["system_b_id"] == system_id
    low, high = pair["interval"]
    difference = pair["difference"]
    if flip:
        difference = None if difference is None else -difference
        low, high = (None if high is None else -high), (None if low is None else -low)
    significant = bool(pair["significant"])
    better = difference is not None and difference > 0
    verdict = ("better" if better else "worse") if significant else "not separable"
    return {
        "difference": difference,
        "interval": [low, high],
        "p_adjusted": pair["p_adjusted"],
        "significant": significant,
        "verdict": verdict,
    }


def system_irt(session: Session, system: System) -> list[dict[str, Any]]:
    """Per fitted dataset where the system is public: its ability, rank and tier, and its difference from every
    other system with the corrected significance (baselines first)."""
    results = []
    for dataset_name in fitted_datasets(session):
        fit = published_fit(session, dataset_name)
        mine = next((row for row in fit["systems"] if row["system_id"] == system.id), None) if fit else None
        if fit is None or mine is None:
            continue
        others = {row["system_id"]: row for row in fit["systems"] if row["system_id"] != system.id}
        comparisons = [
            {"other": others[other], **_verdict(pair, system.id)}
            for pair in fit["pairs"]
            if system.id in (pair["system_a_id"], pair["system_b_id"])
            and (other := pair["system_b_id"] if pair["system_a_id"] == system.id else pair["system_a_id"]) in others
        ]
        comparisons.sort(key=lambda c: (not c["other"]["is_baseline"], c["other"]["rank"]))
        results.append(
            {
                "dataset": dataset_name,
                "fit_id": fit["fit_id"],
                "url": fit["url"],
                "signature": fit["signature_text"],
                "system": mine,
                "systems_fitted": len(fit["systems"]),
                "baselines_fitted": sum(1 for row in fit["systems"] if row["is_baseline"]),
                "comparisons": comparisons,
                "beats_baselines": [
                    c["other"]["label"] for c in comparisons if c["other"]["is_baseline"] and c["verdict"] == "better"
                ],
            }
        )
    return results


def _public_prompt_context(session: Session, dataset_name: str, prompt_id: str) -> list[dict[str, Any]] | None:
    """The conversation a public experiment showed for the prompt (datasets imported with their judgements only)."""
    query = (
        select(ExperimentItem, Experiment)
        .join(Experiment, col(Experiment.id) == col(ExperimentItem.experiment_id))
        .where(Experiment.dataset_name == dataset_name, ExperimentItem.prompt_id == prompt_id)
        .order_by(col(ExperimentItem.id))
    )
    for item, experiment in session.exec(query):
        if item.context and experiment_is_public(session, experiment):
            return list(item.context)
    return None


def prompt_detail(session: Session, dataset_name: str, prompt_id: str) -> dict[str, Any]:
    """A prompt's conversation and references (from the installed release, else as rated) and its discrimination
    in the newest fit, with its rank among the dataset's prompts."""
    context, references = None, []
    try:
        dataset = installed_dataset(dataset_name)
    except HubError:
        dataset = None
    prompt = next((p for p in dataset.prompts if p.id == prompt_id), None) if dataset else None
    if prompt is not None:
        context, references = [t.model_dump() for t in prompt.context], list(prompt.references)
    fit = published_fit(session, dataset_name)
    table = fit["prompts"] if fit else []
    position = next((i for i, row in enumerate(table) if row["prompt"] == prompt_id), None)
    if prompt is None and position is None:
        raise NotFound(f"no prompt {prompt_id!r} in dataset {dataset_name!r}")
    if context is None:
        context = _public_prompt_context(session, dataset_name, prompt_id) or []
    irt = None
    if fit is not None and position is not None:
        irt = {
            **table[position],
            "rank": position + 1,
            "of": len(table),
            "band": _band(position + 1, len(table)),
            "fit_id": fit["fit_id"],
            "signature": fit["signature_text"],
            "url": fit["url"],
        }
    return {
        "dataset": dataset_name,
        "prompt_id": prompt_id,
        "installed": prompt is not None,
        "context": context,
        "references": references,
        "irt": irt,
    }


def discrimination_by_prompt(session: Session, dataset_name: str) -> dict[str, dict[str, Any]]:
    """Prompt id -> its row in the newest fit (for the dataset page's prompt list)."""
    fit = published_fit(session, dataset_name)
    if fit is None:
        return {}
    return {row["prompt"]: {**row, "rank": rank} for rank, row in enumerate(fit["prompts"], start=1)}


def statistics_index(session: Session, fits: FitCache | None = None) -> list[dict[str, Any]]:
    """Every dataset with a published fit: its judgement count, top system and when it was fitted (overview)."""
    fits = fits or FitCache(session)
    found = []
    for dataset_name in fitted_datasets(session):
        fit = fits.get(dataset_name)
        if fit is None or not fit["systems"]:
            continue
        found.append(
            {
                "dataset": dataset_name,
                "url": fit["url"],
                "n_judgements": fit["n_judgements"],
                "systems": len(fit["systems"]),
                "top_system": fit["systems"][0]["system"],
                "top_system_id": fit["systems"][0]["system_id"],
                "fitted_at": fit["fitted_at"],
            }
        )
    return found
