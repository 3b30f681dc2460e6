"""Prompt-level (cluster) bootstrap of an IRT fit: intervals for abilities, differences and ranks.

Ability and difference intervals are bias-corrected normal intervals: centred on 2 * estimate - mean(draws) (the
bootstrap's estimate of the MAP's bias removed once, not added as a percentile interval does), half-width z times
the draws' standard deviation. Percentile intervals of the same draws under-covered: on 200 data sets simulated with
known truth in four shapes, 95% percentile intervals of pairwise differences covered 0.895-0.941 (0.915 overall), the
bias-corrected normal ones 0.947-0.973 (0.950 overall; abilities 0.923 -> 0.958), 4% wider on average
(scripts/bench_irt_coverage.py measures both).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from evaluation.irt.likelihood import Cells, Problem
from evaluation.irt.model import IrtFit, single_threaded_blas
from evaluation.irt.newton import newton_refit

RESAMPLING = ("prompts+judgements", "prompts")
INTERVALS = ("bias-corrected normal", "percentile")
INTERVAL = INTERVALS[0]
Progress = Callable[[float], None]
"""Called with the fraction of bootstrap replicates done, in [0, 1]."""


@dataclass(frozen=True)
class BootstrapResult:
    """Refits on prompts resampled with replacement. abilities (n_bootstrap, n_systems), anchor column = 0;
    estimate (n_systems,) the point fit's abilities the draws scatter around (needed by bias-corrected intervals)."""

    abilities: np.ndarray
    tau: np.ndarray  # (n_bootstrap,)
    seed: int
    seconds: float
    converged: int  # replicates whose optimiser reported convergence
    resample: str = RESAMPLING[0]
    estimate: np.ndarray | None = None

    @property
    def n_bootstrap(self) -> int:
        return len(self.tau)

    def ability_intervals(self, level: float = 0.95, method: str = INTERVAL) -> np.ndarray:
        """(n_systems, 2) interval of each ability (relative to the anchor)."""
        return bootstrap_interval(self.estimate, self.abilities, level, method)

    def differences(self) -> np.ndarray:
        """(n_bootstrap, n_systems, n_systems): ability of row system minus column system, per replicate."""
        return self.abilities[:, :, None] - self.abilities[:, None, :]

    def difference_intervals(self, level: float = 0.95, method: str = INTERVAL) -> np.ndarray:
        """(n_systems, n_systems, 2) interval of every pairwise difference (row minus column)."""
        estimate = None if self.estimate is None else self.estimate[:, None] - self.estimate[None, :]
        return bootstrap_interval(estimate, self.differences(), level, method)

    def ranks(self) -> np.ndarray:
        """(n_bootstrap, n_systems) rank of each system per replicate, 1 = highest ability."""
        order = np.argsort(-self.abilities, axis=1, kind="stable")
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, order.shape[1] + 1)[None, :], axis=1)
        return ranks

    def rank_intervals(self, level: float = 0.95) -> np.ndarray:
        """(n_systems, 2) integer percentile interval of each system's rank (best, worst)."""
        tail = (1.0 - level) / 2.0
        ranks = self.ranks()
        low = np.quantile(ranks, tail, axis=0, method="lower")
        high = np.quantile(ranks, 1.0 - tail, axis=0, method="higher")
        return np.stack([low, high], axis=1).astype(int)


def _percentiles(samples: np.ndarray, level: float) -> np.ndarray:
    """Percentile interval along axis 0, stacked on a new last axis."""
    tail = (1.0 - level) / 2.0
    return np.moveaxis(np.quantile(samples, [tail, 1.0 - tail], axis=0), 0, -1)


def bootstrap_interval(
    estimate: np.ndarray | None, draws: np.ndarray, level: float = 0.95, method: str = INTERVAL
) -> np.ndarray:
    """Interval of each column of `draws` (n_bootstrap, ...) around the point `estimate` (...), stacked on a new
    last axis. "bias-corrected normal": 2 estimate - mean(draws) +- z sd(draws); "percentile": the draws' quantiles
    (estimate unused)."""
    if method == "percentile":
        return _percentiles(draws, level)
    if method != "bias-corrected normal":
        raise ValueError(f"unknown interval {method!r}; expected one of {', '.join(INTERVALS)}")
    if estimate is None:
        raise ValueError("a bias-corrected interval needs the point estimate")
    centre = 2 * np.asarray(estimate, dtype=float) - draws.mean(axis=0)
    half = norm.ppf(0.5 + level / 2) * draws.std(axis=0, ddof=1 if len(draws) > 1 else 0)
    return np.stack([centre - half, centre + half], axis=-1)


def prompt_weights(rng: np.random.Generator, n_prompts: int) -> np.ndarray:
    """How often each prompt is drawn when n_prompts prompts are resampled with replacement."""
    return np.bincount(rng.integers(0, n_prompts, n_prompts), minlength=n_prompts).astype(float)


def refit(problem: Problem, theta0: np.ndarray, cells: Cells) -> tuple[np.ndarray, bool]:
    """Refit from a nearby start: Newton where the model allows (a few steps), else or on failure L-BFGS-B."""
    if not problem.rater_terms:
        theta, converged = newton_refit(problem, theta0, cells)
        if converged:
            return theta, True
    theta, result = problem.solve(theta0, cells)
    return theta, bool(result.success)


def bootstrap_fit(
    fit: IrtFit,
    *,
    n_bootstrap: int = 200,
    seed: int = 0,
    resample: str = "prompts+judgements",
    progress: Progress | None = None,
) -> BootstrapResult:
    """Refit the model n_bootstrap times on resampled data, each refit warm-started at the point fit.

    resample="prompts": prompts are drawn with replacement; a prompt drawn m times counts its judgements m times
    (one discrimination), prompts not drawn leave the fit, so the intervals treat prompts as a sample.
    resample="prompts+judgements" (default) then also resamples the judgements inside each drawn prompt (Poisson
    weights: a cell with n judgements of a prompt drawn m times gets Poisson(m n)). Prompt resampling alone
    under-covers because every prompt's discrimination is re-estimated from the very same judgements: in
    simulations with 25-120 judgements per prompt its 90% intervals covered 76-84%; the two-stage scheme covered
    91-95% (conservative, as two-stage bootstraps are).
    """
    if resample not in RESAMPLING:
        raise ValueError(f"unknown resampling {resample!r}; expected one of {', '.join(RESAMPLING)}")
    if fit.problem is None or fit.cells is None or fit.theta is None:
        raise ValueError("the fit does not carry its problem (was it loaded from JSON?)")
    if n_bootstrap < 1:
        raise ValueError("n_bootstrap must be at least 1")
    started = time.perf_counter()
    problem, cells, theta = fit.problem, fit.cells, fit.theta
    rng = np.random.default_rng(seed)
    abilities = np.empty((n_bootstrap, len(fit.systems)))
    tau = np.empty(n_bootstrap)
    converged = 0
    with single_threaded_blas():
        for replicate in range(n_bootstrap):
            counts = cells.counts * prompt_weights(rng, problem.n_prompts)[cells.prompt, None]
            if resample == "prompts+judgements":
                counts = rng.poisson(counts).astype(float)
            sample = cells.take(counts.sum(axis=1) > 0, counts)
            solution, ok = refit(problem, theta, sample)
            values = problem.unpack(solution)
            abilities[replicate] = values["abilities"]
            tau[replicate] = np.exp(values["eta"])
            converged += ok
            if progress is not None:
                progress((replicate + 1) / n_bootstrap)
    seconds = time.perf_counter() - started
    return BootstrapResult(abilities, tau, seed, seconds, converged, resample, estimate=fit.abilities.copy())
