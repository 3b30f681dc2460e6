"""The MAP fit of the pairwise graded logit with ties (the model, its priors and objective:
evaluation.irt.likelihood): system abilities relative to an anchor, prompt discriminations, a tie threshold and,
optionally, rater terms, by L-BFGS-B from a warm start, with the fit's signature (model, priors, versions).
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
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import evaluation
from evaluation.errors import InvalidInputError
from evaluation.irt.likelihood import Cells, Priors, Problem, aggregate
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
