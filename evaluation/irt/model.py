"""Pairwise graded logit with ties: system abilities, prompt discriminations, a tie threshold, MAP by L-BFGS-B.

For a judgement of systems A and B on prompt k (by rater r, A shown on the left when pos = +1, right when -1):

    x = w_r * a_k * (t_A - t_B) + b_r * pos
    P(A better) = s(x - tau),  P(B better) = s(-x - tau),
    P(tie) = 1 - P(A) - P(B) = s(x + tau) s(tau - x) (1 - exp(-2 tau))

with s the logistic function, a_k = exp(alpha_k) > 0, tau = exp(eta) > 0; the rater terms w_r = exp(omega_r)
(reliability) and b_r (left/position bias) are optional and fixed at w = 1, b = 0 otherwise.

Identifiability: the likelihood depends on ability differences only, so the anchor system's ability is fixed at 0
(adding a system does not move the others); the scale shared by a_k, w_r and t is set by the priors
alpha_k ~ N(0, sd), omega_r ~ N(0, sd) (geometric-mean discrimination and reliability near 1). A per-prompt
difficulty would cancel in a pairwise comparison and is not modelled; tau is shared by all prompts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import scipy
from scipy.optimize import minimize
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import evaluation
from evaluation.errors import InvalidInputError
from evaluation.judgements import Judgements

MODEL_NAME = "pairwise-graded-logit-ties"
MODEL_VERSION = "2"  # 2: prior sd of log discrimination 0.5 (was 1.0)
# How the judgements are ordered before the fit (the seeded bootstrap depends on it): Judgements.canonical.
JUDGEMENT_ORDER = "canonical: labels sorted (numbers by value), rows sorted by every column"


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS to one thread: L-BFGS-B makes many tiny BLAS calls, and OpenBLAS's thread hand-offs cost ~10x
    the arithmetic when cores are shared. Uses threadpoolctl when installed, else changes nothing."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency; stay correct without it
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@dataclass(frozen=True)
class Priors:
    """Normal priors of the MAP fit (standard deviations on the parameter scale named).

    sd_log_discrimination is 0.5 (95% of discriminations within 0.37-2.7), not wider: a discrimination is positive,
    so a prompt on which the weaker system happens to answer better can only be explained by a discrimination near
    0, and with a wide prior the fit turns such prompt-level preferences into a spurious ability gap. In
    simulations of two equal systems whose prompts each favour one side (tests/test_irt_calibration.py), prior sd 1.0
    declared the gap significant in 20 of 20 runs and sd 0.5 in none, while recovery of the simulated
    discriminations is unchanged."""

    sd_ability: float = 3.0
    sd_log_discrimination: float = 0.5
    mean_log_tau: float = math.log(0.5)
    sd_log_tau: float = 2.0
    sd_rater_bias: float = 1.0
    sd_log_reliability: float = 1.0


@dataclass(frozen=True)
class Cells:
    """Judgements aggregated by (system pair in index order, prompt[, rater, position]); counts (n, 3) of
    A wins, B wins, ties. rater is n_raters (a dummy slot with w = 1, b = 0) when unknown or without rater terms."""

    a: np.ndarray  # (n,) int64, a < b
    b: np.ndarray  # (n,) int64
    prompt: np.ndarray  # (n,) int64
    rater: np.ndarray  # (n,) int64
    pos: np.ndarray  # (n,) float64 in {-1, 0, 1}
    counts: np.ndarray  # (n, 3) float64
    # Derived once, used by every objective evaluation:
    pair: np.ndarray = field(init=False, repr=False)  # (n,) index into pair_a / pair_b
    pair_a: np.ndarray = field(init=False, repr=False)  # (n_pairs,)
    pair_b: np.ndarray = field(init=False, repr=False)
    with_a: np.ndarray = field(init=False, repr=False)  # (n,) A wins + ties: the weight of log s(x - tau)
    with_b: np.ndarray = field(init=False, repr=False)  # (n,) B wins + ties: the weight of log s(-x - tau)
    net: np.ndarray = field(init=False, repr=False)  # (n,) A wins - B wins

    def __post_init__(self) -> None:
        key = self.a * (int(self.b.max(initial=0)) + 1) + self.b
        _, first, pair = np.unique(key, return_index=True, return_inverse=True)
        n_a, n_b, n_t = self.counts[:, 0], self.counts[:, 1], self.counts[:, 2]
        derived = {
            "pair": pair.astype(np.int64).reshape(-1),
            "pair_a": self.a[first],
            "pair_b": self.b[first],
            "with_a": n_a + n_t,
            "with_b": n_b + n_t,
            "net": n_a - n_b,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def take(self, mask: np.ndarray, counts: np.ndarray) -> Cells:
        return Cells(self.a[mask], self.b[mask], self.prompt[mask], self.rater[mask], self.pos[mask], counts[mask])


def _exp(log_scale: np.ndarray) -> np.ndarray:
    """exp of a log discrimination or reliability, its argument clipped to +-30 so that a wild line-search trial
    point cannot overflow (the prior, computed unclipped, makes such points costly anyway)."""
    return np.exp(np.clip(log_scale, -30.0, 30.0))


def log_sigmoid(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log s(u) and s(u), overflow-free."""
    log_s = np.log1p(np.exp(-np.abs(u)))
    np.subtract(np.minimum(u, 0.0), log_s, out=log_s)
    return log_s, np.exp(log_s)


def aggregate(j: Judgements, *, rater_terms: bool) -> Cells:
    """Collapse identical (pair, prompt[, rater, position]) judgements into outcome counts; j holds no auto ties."""
    swap = j.system_a > j.system_b
    a = np.where(swap, j.system_b, j.system_a).astype(np.int64)
    b = np.where(swap, j.system_a, j.system_b).astype(np.int64)
    outcome = np.where(swap, -j.outcome, j.outcome).astype(np.int64)
    n_raters = len(j.raters)
    if rater_terms:
        rater = np.where(j.rater >= 0, j.rater, n_raters).astype(np.int64)
        pos = np.select([j.left_is_a == 1, j.left_is_a == 0], [1, -1], 0).astype(np.int64)
        pos = np.where(swap, -pos, pos)
    else:
        rater = np.full(len(j), n_raters, dtype=np.int64)
        pos = np.zeros(len(j), dtype=np.int64)
    n_systems, n_prompts = len(j.systems), len(j.prompts)
    key = ((a * n_systems + b) * n_prompts + j.prompt.astype(np.int64)) * (n_raters + 1) + rater
    key = key * 3 + (pos + 1)
    unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    counts = np.zeros((len(unique), 3))
    for column, value in enumerate((1, -1, 0)):
        counts[:, column] = np.bincount(inverse[outcome == value], minlength=len(unique))
    return Cells(a[first], b[first], j.prompt[first].astype(np.int64), rater[first], pos[first].astype(float), counts)


@dataclass
class Problem:
    """The MAP objective over packed parameters [abilities without anchor, alpha, eta, (bias, omega)]."""

    n_systems: int
    n_prompts: int
    n_raters: int
    anchor: int
    rater_terms: bool
    priors: Priors

    @property
    def size(self) -> int:
        return self.n_systems - 1 + self.n_prompts + 1 + (2 * self.n_raters if self.rater_terms else 0)

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        s, k, r = self.n_systems, self.n_prompts, self.n_raters
        abilities = np.insert(theta[: s - 1], self.anchor, 0.0)
        alpha = theta[s - 1 : s - 1 + k]
        eta = float(theta[s - 1 + k])
        bias, omega = np.zeros(r + 1), np.zeros(r + 1)  # last slot: unknown rater
        if self.rater_terms:
            start = s + k
            bias[:r], omega[:r] = theta[start : start + r], theta[start + r : start + 2 * r]
        return {"abilities": abilities, "alpha": alpha, "eta": eta, "bias": bias, "omega": omega}

    def initial(self) -> np.ndarray:
        theta = np.zeros(self.size)
        theta[self.n_systems - 1 + self.n_prompts] = self.priors.mean_log_tau
        return theta

    def objective(self, theta: np.ndarray, cells: Cells) -> tuple[float, np.ndarray]:
        """Negative log posterior and its gradient; O(n cells) vectorised work, gradients scattered by bincount.

        With u_A = x - tau and u_B = -x - tau: log P(tie) = log s(u_A) + log s(u_B) + 2 tau + log(1 - e^-2tau), so
        the log-likelihood is (A wins + ties) log s(u_A) + (B wins + ties) log s(u_B) + ties * constant.
        """
        p, s, k, r = self.priors, self.n_systems, self.n_prompts, self.n_raters
        v = self.unpack(theta)
        t, alpha, eta = v["abilities"], v["alpha"], v["eta"]
        tau = math.exp(min(max(eta, -20.0), 6.0))  # clipped like _exp: only wild trial points reach the bounds
        n_ties = float(cells.counts[:, 2].sum())
        scale = _exp(alpha)[cells.prompt]
        if self.rater_terms:
            scale *= _exp(v["omega"])[cells.rater]
        core = scale * (t[cells.pair_a] - t[cells.pair_b])[cells.pair]
        x = core + v["bias"][cells.rater] * cells.pos if self.rater_terms else core
        log_a, p_a = log_sigmoid(x - tau)
        log_b, p_b = log_sigmoid(-x - tau)
        tie_constant = 2.0 * tau + math.log(-math.expm1(-2.0 * tau))
        loglik = float(cells.with_a @ log_a + cells.with_b @ log_b) + n_ties * tie_constant
        g_x = cells.net - cells.with_a * p_a + cells.with_b * p_b
        g_tau = float(cells.with_a @ p_a + cells.with_b @ p_b) - float(cells.counts[:, :2].sum())
        g_tau += n_ties * 2.0 / math.expm1(2.0 * tau)
        g_pair = np.bincount(cells.pair, g_x * scale, minlength=len(cells.pair_a))
        g_abilities = np.bincount(cells.pair_a, g_pair, minlength=s) - np.bincount(cells.pair_b, g_pair, minlength=s)
        g_core = g_x * core
        grad = np.empty(self.size)
        grad[: s - 1] = np.delete(g_abilities, self.anchor) - np.delete(t, self.anchor) / p.sd_ability**2
        grad[s - 1 : s - 1 + k] = np.bincount(cells.prompt, g_core, minlength=k) - alpha / p.sd_log_discrimination**2
        grad[s - 1 + k] = g_tau * tau - (eta - p.mean_log_tau) / p.sd_log_tau**2
        logprior = -0.5 * (
            float(t @ t) / p.sd_ability**2
            + float(alpha @ alpha) / p.sd_log_discrimination**2
            + (eta - p.mean_log_tau) ** 2 / p.sd_log_tau**2
        )
        if self.rater_terms:
            bias, omega = v["bias"][:r], v["omega"][:r]
            g_bias = np.bincount(cells.rater, g_x * cells.pos, minlength=r + 1)[:r]
            grad[s + k : s + k + r] = g_bias - bias / p.sd_rater_bias**2
            g_omega = np.bincount(cells.rater, g_core, minlength=r + 1)[:r]
            grad[s + k + r :] = g_omega - omega / p.sd_log_reliability**2
            logprior -= 0.5 * (float(bias @ bias) / p.sd_rater_bias**2 + float(omega @ omega) / p.sd_log_reliability**2)
        return -(loglik + logprior), -grad

    def solve(self, theta0: np.ndarray, cells: Cells, *, max_iterations: int = 5000) -> tuple[np.ndarray, Any]:
        """L-BFGS-B from theta0 (deterministic); the objective is divided by the judgement count for a stable
        convergence tolerance."""
        total = max(float(cells.counts.sum()), 1.0)

        def scaled(theta: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad = self.objective(theta, cells)
            return value / total, grad / total

        result = minimize(
            scaled,
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iterations, "maxcor": 20, "ftol": 1e-12, "gtol": 1e-7},
        )
        return result.x, result


@dataclass
class IrtFit:
    """A MAP fit: abilities relative to the anchor (logit scale), discriminations per prompt, tie threshold."""

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    raters: tuple[str, ...]
    abilities: np.ndarray  # (n_systems,), anchor = 0
    discrimination: np.ndarray  # (n_prompts,) a_k > 0
    log_discrimination_se: np.ndarray  # (n_prompts,) Laplace s.e. of log a_k given the other parameters
    tau: float
    anchor: str
    n_judgements: int  # judgements in the likelihood (human, not excluded)
    n_auto_ties: int
    n_excluded: int
    tie_rate: float  # ties (human and automatic) / non-excluded judgements
    human_tie_rate: float
    system_judgements: np.ndarray  # (n_systems,) judgements in the likelihood per system
    prompt_judgements: np.ndarray  # (n_prompts,)
    converged: bool
    iterations: int
    disconnected: tuple[str, ...]  # systems with no chain of comparisons to the anchor (ability set by the prior)
    signature: dict[str, Any]
    system_names: tuple[str, ...] = ()  # display name per system; systems are identities (ids when known)
    system_ids: tuple[int | None, ...] = ()  # the source's system id per system, None when keyed by name
    rater_bias: np.ndarray | None = None  # (n_raters,) added to the left system's logit
    rater_reliability: np.ndarray | None = None  # (n_raters,) multiplier on a_k (t_A - t_B)
    problem: Problem | None = field(default=None, repr=False)
    cells: Cells | None = field(default=None, repr=False)
    theta: np.ndarray | None = field(default=None, repr=False)


def choose_anchor(j: Judgements, anchor: str | int | None, baselines: tuple[str, ...] | list[str] = ()) -> int:
    """The anchor's index: the one given (an identity, or a name only one system carries), else the first baseline
    identity present, else the most judged system."""
    if anchor is not None:
        return j.find_system(anchor, role="anchor")
    for name in baselines:
        if name in j.systems:
            return j.systems.index(name)
    per_system = j.judgements_per_system()
    order = sorted(range(len(j.systems)), key=lambda i: (-per_system[i], j.systems[i]))
    return order[0]


def _disconnected(j: Judgements, anchor: int) -> tuple[str, ...]:
    n = len(j.systems)
    graph = coo_matrix((np.ones(len(j)), (j.system_a, j.system_b)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return tuple(name for name, label in zip(j.systems, labels, strict=True) if label != labels[anchor])


def _log_discrimination_se(problem: Problem, theta: np.ndarray, cells: Cells) -> np.ndarray:
    """1 / sqrt(observed information of alpha_k), other parameters held at the MAP."""
    v = problem.unpack(theta)
    tau = math.exp(v["eta"])
    core = (
        np.exp(v["alpha"])[cells.prompt]
        * np.exp(v["omega"])[cells.rater]
        * (v["abilities"][cells.a] - v["abilities"][cells.b])
    )
    x = core + v["bias"][cells.rater] * cells.pos
    p_a, p_b = 1 / (1 + np.exp(-(x - tau))), 1 / (1 + np.exp(x + tau))
    n_a, n_b, n_t = cells.counts.T
    var_a, var_b = p_a * (1 - p_a), p_b * (1 - p_b)
    g_x = n_a * (1 - p_a) - n_b * (1 - p_b) + n_t * (p_b - p_a)
    h_x = -(n_a * var_a + n_b * var_b + n_t * (var_a + var_b))
    curvature = np.bincount(cells.prompt, h_x * core**2 + g_x * core, minlength=problem.n_prompts)
    info = 1 / problem.priors.sd_log_discrimination**2 - curvature
    return 1 / np.sqrt(np.maximum(info, 1e-12))


def fit_pairwise_irt(
    j: Judgements,
    *,
    anchor: str | None = None,
    baselines: tuple[str, ...] | list[str] = (),
    rater_terms: bool = False,
    seed: int = 0,
    priors: Priors | None = None,
) -> IrtFit:
    """MAP fit of the pairwise graded logit with ties on all non-excluded judgements.

    Excluded judgements are dropped; automatic ties are left out of the likelihood but counted in tie_rate. The
    fit is deterministic (seed is recorded for the bootstrap that may follow).
    """
    started = time.perf_counter()
    priors = priors or Priors()
    j = j.canonical()
    kept = j.subset(~j.excluded)
    human = kept.subset(~kept.auto_tie).compact()
    if len(human) == 0:
        raise InvalidInputError("no human judgements to fit (all are excluded or automatic ties)")
    anchor_index = choose_anchor(human, anchor, baselines)
    problem = Problem(len(human.systems), len(human.prompts), len(human.raters), anchor_index, rater_terms, priors)
    cells = aggregate(human, rater_terms=rater_terms)
    with single_threaded_blas():
        theta, result = problem.solve(_warm_start(problem, cells), cells)
    v = problem.unpack(theta)
    n_kept = len(kept)
    fit = IrtFit(
        systems=human.systems,
        prompts=human.prompts,
        raters=human.raters,
        abilities=v["abilities"],
        discrimination=np.exp(v["alpha"]),
        log_discrimination_se=_log_discrimination_se(problem, theta, cells),
        tau=math.exp(v["eta"]),
        anchor=human.systems[anchor_index],
        n_judgements=len(human),
        n_auto_ties=int(kept.auto_tie.sum()),
        n_excluded=int(j.excluded.sum()),
        tie_rate=float((kept.outcome == 0).sum() / n_kept),
        human_tie_rate=float((human.outcome == 0).sum() / len(human)),
        system_judgements=human.judgements_per_system(),
        prompt_judgements=np.bincount(human.prompt, minlength=len(human.prompts)),
        converged=bool(result.success),
        iterations=int(result.nit),
        disconnected=_disconnected(human, anchor_index),
        signature={},
        system_names=human.system_names,
        system_ids=tuple(human.system_id(i) for i in range(len(human.systems))),
        rater_bias=v["bias"][:-1] if rater_terms else None,
        rater_reliability=np.exp(v["omega"][:-1]) if rater_terms else None,
        problem=problem,
        cells=cells,
        theta=theta,
    )
    fit.signature = fit_signature(fit, priors=priors, seed=seed, seconds=time.perf_counter() - started)
    return fit


def _warm_start(problem: Problem, cells: Cells) -> np.ndarray:
    """Starting point: abilities and tau of the same model with one discrimination, fitted on pair-level counts."""
    pair_key = cells.a * problem.n_systems + cells.b
    unique, first, inverse = np.unique(pair_key, return_index=True, return_inverse=True)
    counts = np.stack([np.bincount(inverse, cells.counts[:, c], minlength=len(unique)) for c in range(3)], axis=1)
    zeros = np.zeros(len(unique), dtype=np.int64)
    pair_cells = Cells(cells.a[first], cells.b[first], zeros, zeros, np.zeros(len(unique)), counts)
    pair_problem = Problem(problem.n_systems, 1, 0, problem.anchor, False, problem.priors)
    theta_pair, _ = pair_problem.solve(pair_problem.initial(), pair_cells)
    theta = problem.initial()
    s, k = problem.n_systems, problem.n_prompts
    theta[: s - 1] = theta_pair[: s - 1] * math.exp(theta_pair[s - 1])
    theta[s - 1 + k] = theta_pair[s]
    return theta


def fit_signature(fit: IrtFit, *, priors: Priors, seed: int, seconds: float) -> dict[str, Any]:
    return {
        "model": MODEL_NAME,
        "model_version": MODEL_VERSION,
        "priors": asdict(priors),
        "anchor": fit.anchor,
        "systems_identified_by": "id" if fit.system_ids and fit.system_ids[0] is not None else "name",
        "judgement_order": JUDGEMENT_ORDER,
        "rater_terms": fit.rater_bias is not None,
        "seed": seed,
        "optimizer": "scipy L-BFGS-B (MAP, analytic gradient)",
        "n_judgements": fit.n_judgements,
        "n_auto_ties": fit.n_auto_ties,
        "n_excluded": fit.n_excluded,
        "n_systems": len(fit.systems),
        "n_prompts": len(fit.prompts),
        "fit_seconds": round(seconds, 4),
        "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": {"chateval-hub": evaluation.__version__, "numpy": np.__version__, "scipy": scipy.__version__},
    }
