"""The prediction-powered ranking report: human-only, judge-only and PPI++ abilities with Wald intervals, rank sets
from simultaneous (Bonferroni) intervals, pairwise tests (Holm) and the effective human sample size."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from evaluation.irt.significance import holm
from evaluation.ppi.estimate import Estimate, human_estimate, judge_estimate, ppi_estimate
from evaluation.ppi.items import Items

VERSION = "1"
METHOD = {
    "model": "bradley-terry",
    "ties": "half-win",
    "unit": "item=(prompt,system pair), votes averaged",
    "estimator": "ppi++ stratified by system pair, weights N_pair/N",
    "lambda": "power-tuned (trace of covariance), clipped to [0,1]",
    "interval": "wald",
    "covariance": "sandwich",
    "rank_set": "bonferroni simultaneous intervals over all pairs",
    "pair_test": "wald z, two-sided, holm",
    "effective_human_n": "n_human_votes * mean over non-anchor systems of (human width / ppi width)^2",
}


def method_signature(level: float) -> str:
    """One line naming the method and its settings, e.g. `ppi-rank|v1|anchor-scale|estimator=...|level=0.95`."""
    fields = {**METHOD, "level": level}
    return "ppi-rank|v" + VERSION + "|" + "|".join(f"{key}={fields[key]}" for key in sorted(fields))


def _round(value: float, digits: int = 6) -> float | None:
    return round(float(value), digits) if math.isfinite(value) else None


def wald_intervals(e: Estimate, level: float) -> np.ndarray:
    """(s, 2) intervals estimate -/+ z se; the anchor's is [0, 0]."""
    z = float(norm.ppf(0.5 + level / 2))
    return np.stack([e.abilities - z * e.se, e.abilities + z * e.se], axis=1)


def pair_table(e: Estimate) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every pair j < k: (j, k, difference theta_j - theta_k, its standard error)."""
    j, k = np.triu_indices(len(e.abilities), 1)
    c = e.covariance
    se = np.sqrt(np.maximum(c[j, j] + c[k, k] - 2 * c[j, k], 0.0))
    return j, k, e.abilities[j] - e.abilities[k], se


def rank_sets(e: Estimate, level: float) -> np.ndarray:
    """(s, 2) best and worst rank of each system (1 = best) consistent with Bonferroni-simultaneous intervals of
    every pairwise difference: all of them hold the true ranks with probability at least `level`."""
    s = len(e.abilities)
    j, k, diff, se = pair_table(e)
    if len(j) == 0:
        return np.ones((s, 2), dtype=int)
    z = float(norm.ppf(1 - (1 - level) / (2 * len(j))))
    above = diff - z * se > 0  # j surely better than k
    below = diff + z * se < 0
    better = np.bincount(k[above], minlength=s) + np.bincount(j[below], minlength=s)
    worse = np.bincount(j[above], minlength=s) + np.bincount(k[below], minlength=s)
    return np.stack([1 + better, s - worse], axis=1)


def effective_human_n(items: Items, human: Estimate, ppi: Estimate, anchor: int) -> tuple[float, np.ndarray]:
    """Per system n_human_votes * (human se / PPI se)^2 (NaN for the anchor) and its mean over the others."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per_system = items.n_human_votes * (human.se / ppi.se) ** 2
    per_system[anchor] = np.nan
    finite = per_system[np.isfinite(per_system)]
    return (float(finite.mean()) if len(finite) else float("nan")), per_system


@dataclass(frozen=True)
class RankReport:
    items: Items
    anchor: int
    level: float
    human: Estimate
    judge: Estimate
    ppi: Estimate

    def _part(self, e: Estimate, i: int) -> dict[str, Any]:
        low, high = wald_intervals(e, self.level)[i]
        return {"estimate": _round(e.abilities[i]), "se": _round(e.se[i]), "interval": [_round(low), _round(high)]}

    def _pairs(self) -> list[dict[str, Any]]:
        j, k, diff, se = pair_table(self.ppi)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = 2 * norm.sf(np.abs(diff) / se)
        p = np.where(se > 0, p, np.where(diff == 0, 1.0, 0.0))
        adjusted = holm(p) if len(p) else p
        alpha = 1 - self.level
        rows = []
        for a, b, d, s_e, pv, pa in zip(j, k, diff, se, p, adjusted, strict=True):
            first, second = (a, b) if d >= 0 else (b, a)
            rows.append(
                {
                    "system_a": self.items.names[first],
                    "system_a_id": self.items.system_id(first),
                    "system_b": self.items.names[second],
                    "system_b_id": self.items.system_id(second),
                    "difference": _round(abs(d)),
                    "se": _round(s_e),
                    "p_value": float(f"{pv:.4g}"),
                    "p_holm": float(f"{pa:.4g}"),
                    "significant": bool(pa < alpha),
                }
            )
        return rows

    def to_json(self) -> dict[str, Any]:
        items, anchor = self.items, self.anchor
        mean_n, per_system = effective_human_n(items, self.human, self.ppi, anchor)
        ranks = rank_sets(self.ppi, self.level)
        order = np.argsort(-self.ppi.abilities, kind="stable")
        systems = [
            {
                "system": items.names[i],
                "system_id": items.system_id(i),
                "anchor": bool(i == anchor),
                "human": self._part(self.human, i),
                "judge": self._part(self.judge, i),
                "ppi": self._part(self.ppi, i),
                "rank_set": [int(ranks[i, 0]), int(ranks[i, 1])],
                "effective_human_n": _round(per_system[i], 1),
            }
            for i in order
        ]
        return {
            "anchor": items.names[anchor],
            "anchor_id": items.system_id(anchor),
            "level": self.level,
            "effective_human_n": _round(mean_n, 1),
            "n_human_votes": items.n_human_votes,
            "n_items": len(items.pair),
            "n_labelled_items": int(items.labelled.sum()),
            "n_pairs": len(items.pair_a),
            "lambda": _round(float(self.ppi.lam or 0.0)),
            "systems": systems,
            "pairs": self._pairs(),
            "notes": list(items.notes),
            "method": method_signature(self.level),
            "signature": {**METHOD, "version": VERSION, "level": self.level},
        }


def rank_report(items: Items, anchor: int, *, level: float = 0.95, lam: float | None = None) -> RankReport:
    """All three estimates on the anchor's scale; `lam` fixes the PPI weight (default: power-tuned)."""
    if not 0.5 <= level < 1:
        raise ValueError(f"level must be in [0.5, 1), got {level}")
    return RankReport(
        items,
        anchor,
        level,
        human_estimate(items, anchor),
        judge_estimate(items, anchor),
        ppi_estimate(items, anchor, lam),
    )
