"""An IRT report (fit + bootstrap + significance) as one JSON-safe document carrying its method signature."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.irt.bootstrap import INTERVAL, BootstrapResult, Progress, bootstrap_fit
from evaluation.irt.model import IrtFit, fit_pairwise_irt
from evaluation.irt.significance import (
    CORRECTIONS,
    PAIR_TEST,
    ExperimentTest,
    PairComparison,
    compare_pairs,
    experiment_tests,
    tiers,
)
from evaluation.judgements import Judgements

REPORT_VERSION = 2  # 2: systems identified by id (system_id, system_a_id, ...), names kept as labels
EXTREME_PROMPTS = 10
# Facts about one run, not the method: in the signature, left out of its text (which two runs of one method share).
UNSIGNED = (
    "fitted_at",
    "fit_seconds",
    "elapsed_seconds",
)  # how many most / least discriminating prompts the report lists


def _number(value: float | None, digits: int = 6) -> float | None:
    """A JSON-safe rounded float: NaN and infinities become None."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def _p(value: float | None) -> float | None:
    """A p-value to 4 significant digits (rounding to decimals would turn 1e-30 into 0)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.4g}")


def signature_text(signature: dict[str, Any]) -> str:
    """One line from the whole signature (nested keys dotted, sorted; the time and durations of the run left out)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}{key}.", inner)
        else:
            flat[prefix[:-1]] = value

    walk("", signature)
    for key in UNSIGNED:
        flat.pop(key, None)
    return "|".join(f"{key}={flat[key]}" for key in sorted(flat))


@dataclass
class IrtReport:
    fit: IrtFit
    bootstrap: BootstrapResult
    comparisons: list[PairComparison]
    tiers: dict[str, int]
    experiments: list[ExperimentTest]
    level: float
    correction: str
    alpha: float
    seconds: float
    identities: dict[str, tuple[int | None, str]] = field(default_factory=dict)  # identity -> (id, name)

    def _who(self, identity: str) -> tuple[int | None, str]:
        return self.identities.get(identity, (None, identity))

    @property
    def signature(self) -> dict[str, Any]:
        return {
            **self.fit.signature,
            "report_version": REPORT_VERSION,
            "bootstrap": self.bootstrap.n_bootstrap,
            "bootstrap_resampling": self.bootstrap.resample,
            "bootstrap_seed": self.bootstrap.seed,
            "interval_level": self.level,
            "interval_method": INTERVAL,
            "pair_test": PAIR_TEST,
            "correction": self.correction,
            "planned_family": "pairs judged directly in an experiment",
            "alpha": self.alpha,
            "elapsed_seconds": round(self.seconds, 3),
        }

    def ranked_systems(self) -> list[dict[str, Any]]:
        fit, boot = self.fit, self.bootstrap
        intervals, rank_intervals = boot.ability_intervals(self.level), boot.rank_intervals(self.level)
        order = np.argsort(-fit.abilities, kind="stable")
        return [
            {
                "system_id": self._who(fit.systems[i])[0],
                "system": self._who(fit.systems[i])[1],
                "ability": _number(fit.abilities[i]),
                "interval": [_number(intervals[i, 0]), _number(intervals[i, 1])],
                "rank": rank,
                "rank_interval": [int(rank_intervals[i, 0]), int(rank_intervals[i, 1])],
                "tier": self.tiers[fit.systems[i]],
                "judgements": int(fit.system_judgements[i]),
                "anchor": fit.systems[i] == fit.anchor,
            }
            for rank, i in enumerate(order, start=1)
        ]

    def prompt_table(self) -> list[dict[str, Any]]:
        """Prompts by discrimination, highest first (ties broken by prompt label)."""
        fit = self.fit
        order = sorted(range(len(fit.prompts)), key=lambda k: (-fit.discrimination[k], fit.prompts[k]))
        return [
            {
                "prompt": fit.prompts[k],
                "discrimination": _number(fit.discrimination[k]),
                "log_discrimination_se": _number(fit.log_discrimination_se[k]),
                "judgements": int(fit.prompt_judgements[k]),
            }
            for k in order
        ]

    def to_json(self) -> dict[str, Any]:
        """A plain, JSON-safe dict (no NaN) of everything the hub publishes and the CLI writes."""
        fit = self.fit
        prompts = self.prompt_table()
        document: dict[str, Any] = {
            "signature": self.signature,
            "signature_text": signature_text(self.signature),
            "anchor": self._who(fit.anchor)[1],
            "anchor_id": self._who(fit.anchor)[0],
            "tau": _number(fit.tau),
            "bootstrap_tau_interval": [_number(v) for v in np.quantile(self.bootstrap.tau, _tails(self.level))],
            "tie_rate": _number(fit.tie_rate),
            "human_tie_rate": _number(fit.human_tie_rate),
            "n_judgements": fit.n_judgements,
            "n_auto_ties": fit.n_auto_ties,
            "n_excluded": fit.n_excluded,
            "converged": fit.converged,
            "iterations": fit.iterations,
            "bootstrap_converged": self.bootstrap.converged,
            "disconnected": list(fit.disconnected),
            "systems": self.ranked_systems(),
            "pairs": [{**self._pair_systems(c.system_a, c.system_b), **_pair_json(c)} for c in self.comparisons],
            "prompts": prompts,
            "most_discriminating": prompts[:EXTREME_PROMPTS],
            "least_discriminating": prompts[::-1][:EXTREME_PROMPTS],
            "experiments": [
                {**self._pair_systems(t.system_a, t.system_b), **_experiment_json(t)} for t in self.experiments
            ],
        }
        if fit.rater_bias is not None and fit.rater_reliability is not None:
            document["raters"] = [
                {"rater": name, "left_bias": _number(bias), "reliability": _number(reliability)}
                for name, bias, reliability in zip(fit.raters, fit.rater_bias, fit.rater_reliability, strict=True)
            ]
        return document

    def _pair_systems(self, system_a: str, system_b: str) -> dict[str, Any]:
        (id_a, name_a), (id_b, name_b) = self._who(system_a), self._who(system_b)
        return {"system_a_id": id_a, "system_a": name_a, "system_b_id": id_b, "system_b": name_b}


def _tails(level: float) -> list[float]:
    return [(1 - level) / 2, 1 - (1 - level) / 2]


def _pair_json(c: PairComparison) -> dict[str, Any]:
    return {
        "difference": _number(c.difference),
        "interval": [_number(c.interval[0]), _number(c.interval[1])],
        "se": _number(c.se),
        "p_value": _p(c.p_value),
        "p_adjusted": _p(c.p_adjusted),
        "significant": c.significant,
        "p_percentile": _p(c.p_percentile),
        "planned": c.planned,
        "p_planned": _p(c.p_planned),
        "significant_planned": c.significant_planned,
    }


def _experiment_json(t: ExperimentTest) -> dict[str, Any]:
    def pair(values: tuple[float, float] | None) -> list[float | None] | None:
        return None if values is None else [_number(values[0]), _number(values[1])]

    return {
        "experiment": t.experiment,
        "wins": t.wins,
        "losses": t.losses,
        "ties": t.ties,
        "auto_ties": t.auto_ties,
        "win_rate": _number(t.win_rate),
        "wilson_interval": pair(t.wilson),
        "clopper_pearson_interval": pair(t.clopper_pearson),
        "cohens_h": _number(t.cohens_h),
        "p_value": _p(t.p_value),
        "p_adjusted": _p(t.p_adjusted),
    }


def planned_pairs(judgements: Judgements) -> frozenset[frozenset[str]]:
    """The pairs of systems some experiment compared directly (automatic ties aside, which show nothing)."""
    shown = ~judgements.auto_tie
    codes = np.unique(np.stack([judgements.system_a[shown], judgements.system_b[shown]], axis=1), axis=0)
    return frozenset(frozenset({judgements.systems[a], judgements.systems[b]}) for a, b in codes if a != b)


def fit_report(
    judgements: Judgements,
    *,
    anchor: str | None = None,
    baselines: tuple[str, ...] | list[str] = (),
    bootstrap: int = 200,
    seed: int = 0,
    rater_terms: bool = False,
    correction: str = "holm",
    level: float = 0.95,
    alpha: float = 0.05,
    resample: str = "prompts+judgements",
    progress: Progress | None = None,
) -> IrtReport:
    """Fit, bootstrap (prompts, then judgements within them; `bootstrap` replicates, seeded) and test every pair;
    what the hub publishes.

    progress, if given, is called with the fraction done in [0, 1] (the point fit counts as the first 5%).
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; expected one of {', '.join(CORRECTIONS)}")
    started = time.perf_counter()
    judgements = judgements.canonical()  # every number below is the same whatever order the judgements came in
    fit = fit_pairwise_irt(judgements, anchor=anchor, baselines=baselines, rater_terms=rater_terms, seed=seed)
    if progress is not None:
        progress(0.05)
    boot_progress = None if progress is None else (lambda done: progress(0.05 + 0.95 * done))
    boot = bootstrap_fit(fit, n_bootstrap=bootstrap, seed=seed, resample=resample, progress=boot_progress)
    comparisons = compare_pairs(
        fit, boot, level=level, correction=correction, alpha=alpha, planned=planned_pairs(judgements)
    )
    ranked = [fit.systems[i] for i in np.argsort(-fit.abilities, kind="stable")]
    return IrtReport(
        fit=fit,
        bootstrap=boot,
        comparisons=comparisons,
        tiers=tiers(ranked, comparisons),
        experiments=experiment_tests(judgements, level=level, correction=correction),
        level=level,
        correction=correction,
        alpha=alpha,
        seconds=time.perf_counter() - started,
        identities={
            identity: (judgements.system_id(i), judgements.system_names[i])
            for i, identity in enumerate(judgements.systems)
        },
    )
