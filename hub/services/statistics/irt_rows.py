"""Rows of the public IRT downloads: the newest fit of every dataset, as three tables (system abilities, pairwise
differences, prompt discriminations), each row carrying the fit id and its method signature.

They hold what the statistics pages show (`irt_views.published_fit`): systems public now, and pairs of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlmodel import Session

from hub.services.statistics.irt_views import fitted_datasets, published_fit

COMMON = ("fit_id", "dataset", "fitted_at", "signature")
FIELDS: dict[str, tuple[str, ...]] = {
    "irt_systems": (
        *COMMON,
        "system",
        "system_id",
        "is_baseline",
        "ability",
        "interval_low",
        "interval_high",
        "rank",
        "rank_low",
        "rank_high",
        "tier",
        "judgements",
        "anchor",
    ),
    "irt_pairs": (
        *COMMON,
        "system_a_id",
        "system_a",
        "system_b_id",
        "system_b",
        "difference",
        "interval_low",
        "interval_high",
        "se",
        "p_value",
        "p_adjusted",
        "significant",
    ),
    "irt_prompts": (*COMMON, "prompt_id", "discrimination", "log_discrimination_se", "judgements", "rank"),
}


def _system(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "system": row["system"],
        "system_id": row["system_id"],
        "is_baseline": row["is_baseline"],
        "ability": row["ability"],
        "interval_low": row["interval"][0],
        "interval_high": row["interval"][1],
        "rank": row["rank"],
        "rank_low": row["rank_interval"][0],
        "rank_high": row["rank_interval"][1],
        "tier": row["tier"],
        "judgements": row["judgements"],
        "anchor": row["anchor"],
    }


def _pair(row: dict[str, Any]) -> dict[str, Any]:
    kept = (
        "system_a_id",
        "system_a",
        "system_b_id",
        "system_b",
        "difference",
        "se",
        "p_value",
        "p_adjusted",
        "significant",
    )
    return {**{k: row[k] for k in kept}, "interval_low": row["interval"][0], "interval_high": row["interval"][1]}


def _prompts(fit: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for rank, row in enumerate(fit["prompts"], start=1):
        yield {
            "prompt_id": row["prompt"],
            "discrimination": row["discrimination"],
            "log_discrimination_se": row["log_discrimination_se"],
            "judgements": row["judgements"],
            "rank": rank,
        }


TABLES: dict[str, Callable[[dict[str, Any]], Iterator[dict[str, Any]]]] = {
    "irt_systems": lambda fit: map(_system, fit["systems"]),
    "irt_pairs": lambda fit: map(_pair, fit["pairs"]),
    "irt_prompts": _prompts,
}


def irt_rows(session: Session, kind: str) -> Iterator[dict[str, Any]]:
    for dataset_name in fitted_datasets(session):
        fit = published_fit(session, dataset_name)
        if fit is None:
            continue
        common = {
            "fit_id": fit["fit_id"],
            "dataset": dataset_name,
            "fitted_at": fit["fitted_at"],
            "signature": fit["signature_text"],
        }
        for row in TABLES[kind](fit):
            yield {**common, **row}
