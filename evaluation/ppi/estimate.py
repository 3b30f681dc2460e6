"""Bradley-Terry abilities from per-pair mean preferences, with sandwich covariances: human-only, judge-only, PPI++.

The target is the human Bradley-Terry fit over the item population: theta (anchor = 0) solving
    sum_p w_p z_p (sigmoid(theta_a - theta_b) - mu_p) = 0,   w_p = N_p / N,  z_p = e_a - e_b,
mu_p the mean human preference on pair p's items (ties half a win). An item's Bradley-Terry loss gradient depends
on its label only through (sigmoid(d) - y) z_p, so the PPI++ M-estimator (Angelopoulos, Duchi, Zrnic 2023),
    L_human(theta) + lambda * (L_judge_all(theta) - L_judge_on_human_items(theta)),
taken per pair (stratified, so humans may cover pairs unevenly), is the fit to the rectified pair means
    m_p = ybar_p(labelled) + lambda * (fbar_p(all) - fbar_p(labelled)),
and its sandwich covariance is H^-1 [sum_p w_p^2 Var(m_p) z_p z_p^T] H^-1 (H the Hessian), Var(m_p) from the
per-item variances and covariance of human and judge preferences. lambda minimises the estimated trace of that
covariance (power tuning, at the lambda = 1 fit) and is clipped to [0, 1]: lambda = 0 is human-only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from evaluation.errors import InvalidInputError
from evaluation.ppi.items import Items

MAX_ABILITY = 25.0  # a fit past this many logits has no finite optimum (one side wins every vote)


@dataclass(frozen=True)
class PairMeans:
    """Per pair p (P,): the weight w_p, the estimated mean preference and the variance of that estimate."""

    weight: np.ndarray
    mean: np.ndarray
    variance: np.ndarray


@dataclass(frozen=True)
class Estimate:
    """abilities (s,) with the anchor at 0, covariance (s, s) (anchor row and column zero), lam the PPI weight."""

    abilities: np.ndarray
    covariance: np.ndarray
    lam: float | None = None

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))


@dataclass(frozen=True)
class PairStats:
    """Sufficient statistics per pair (P,): item counts and the moments of human (y) and judge (f) preferences."""

    n_all: np.ndarray  # N_p, items the judge graded
    n_lab: np.ndarray  # n_p, of which a human judged
    y_lab: np.ndarray  # mean human preference over labelled items
    f_lab: np.ndarray  # mean judge preference over labelled items
    f_all: np.ndarray  # mean judge preference over all items
    s_yy: np.ndarray  # variance of y over labelled items (ddof 1)
    s_yf: np.ndarray  # covariance of y and f over labelled items (ddof 1)
    s_ff_lab: np.ndarray  # variance of f over labelled items (ddof 1)
    s_ff_unl: np.ndarray  # variance of f over unlabelled items (ddof 1)
    s_ff: np.ndarray  # variance of f over all items (ddof 1)

    @property
    def weight(self) -> np.ndarray:
        return self.n_all / self.n_all.sum()


def _moments(group: np.ndarray, x: np.ndarray, y: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    count = np.bincount(group, minlength=size).astype(float)
    safe = np.maximum(count, 1.0)
    mx, my = np.bincount(group, x, minlength=size) / safe, np.bincount(group, y, minlength=size) / safe
    dx, dy = x - mx[group], y - my[group]
    cov = np.bincount(group, dx * dy, minlength=size) / np.maximum(count - 1, 1.0)
    return count, mx, my, cov


def pair_stats(items: Items) -> PairStats:
    size, lab = len(items.pair_a), items.labelled
    n_all, f_all, _, s_ff = _moments(items.pair, items.judge, items.judge, size)
    g, y, f = items.pair[lab], items.human[lab], items.judge[lab]
    n_lab, y_lab, f_lab, s_yf = _moments(g, y, f, size)
    _, _, _, s_yy = _moments(g, y, y, size)
    _, _, _, s_ff_lab = _moments(g, f, f, size)
    unl = items.pair[~lab], items.judge[~lab]
    _, _, _, s_ff_unl = _moments(unl[0], unl[1], unl[1], size)
    return PairStats(n_all, n_lab, y_lab, f_lab, f_all, s_yy, s_yf, s_ff_lab, s_ff_unl, s_ff)


def human_means(st: PairStats) -> PairMeans:
    return PairMeans(st.weight, st.y_lab, st.s_yy / st.n_lab)


def judge_means(st: PairStats) -> PairMeans:
    return PairMeans(st.weight, st.f_all, st.s_ff / st.n_all)


def _variance_terms(st: PairStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Var(m_p) = a - 2 lam b + lam^2 c: with rho = n/N, m_p = ybar_L - lam (1-rho) fbar_L + lam (1-rho) fbar_U,
    the labelled part's variance Var_L(y - lam (1-rho) f) / n plus the unlabelled part's (lam (1-rho))^2 Var_U(f) /
    (N - n)."""
    shrink = 1.0 - st.n_lab / st.n_all
    unlabelled = st.n_all - st.n_lab
    tail = np.where(unlabelled > 0, st.s_ff_unl / np.maximum(unlabelled, 1.0), 0.0)
    a = st.s_yy / st.n_lab
    b = shrink * st.s_yf / st.n_lab
    c = shrink**2 * (st.s_ff_lab / st.n_lab + tail)
    return a, b, c


def ppi_means(st: PairStats, lam: float) -> PairMeans:
    a, b, c = _variance_terms(st)
    mean = st.y_lab + lam * (st.f_all - st.f_lab)
    return PairMeans(st.weight, mean, np.maximum(a - 2 * lam * b + lam**2 * c, 0.0))


def _reduced(items: Items, anchor: int) -> np.ndarray:
    """(P, s-1) rows z_p = e_a - e_b without the anchor's column."""
    s, size = len(items.systems), len(items.pair_a)
    z = np.zeros((size, s))
    z[np.arange(size), items.pair_a] = 1.0
    z[np.arange(size), items.pair_b] = -1.0
    return np.delete(z, anchor, axis=1)


def fit_abilities(z: np.ndarray, means: PairMeans, *, max_iterations: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method with backtracking on sum_p w_p (log(1 + e^d_p) - m_p d_p), d = z theta (convex).

    A rectified mean outside [0, 1] (PPI noise on a pair with few human items) is clipped to it, without which the
    objective may have no minimum. Returns (theta without the anchor, Hessian at theta); InvalidInputError when
    the optimum is not finite (some system wins or loses every comparison it is in)."""
    w, m = means.weight, np.clip(means.mean, 0.0, 1.0)
    theta = np.zeros(z.shape[1])

    def objective(t: np.ndarray) -> float:
        d = z @ t
        return float(w @ (np.logaddexp(0.0, d) - m * d))

    value = objective(theta)
    for _ in range(max_iterations):
        d = z @ theta
        p = expit(d)
        grad = z.T @ (w * (p - m))
        hess = (z * (w * p * (1 - p))[:, None]).T @ z
        step = np.linalg.solve(hess + 1e-12 * np.eye(len(theta)), -grad)
        size = 1.0
        while True:
            candidate = theta + size * step
            new_value = objective(candidate)
            if new_value <= value + 1e-4 * size * float(grad @ step) or size < 1e-8:
                break
            size /= 2
        theta, value = candidate, new_value
        if np.max(np.abs(theta)) > MAX_ABILITY:
            raise InvalidInputError(
                "the abilities have no finite estimate: some system wins (or loses) every vote it is in, with no "
                "comparison to hold it; more votes on its pairs are needed"
            )
        if np.max(np.abs(size * step)) < 1e-10:
            break
    p = expit(z @ theta)
    return theta, (z * (w * p * (1 - p))[:, None]).T @ z


def _embed(reduced: np.ndarray, anchor: int, *, matrix: bool) -> np.ndarray:
    if not matrix:
        return np.insert(reduced, anchor, 0.0)
    full = np.insert(reduced, anchor, 0.0, axis=0)
    return np.insert(full, anchor, 0.0, axis=1)


def sandwich(z: np.ndarray, means: PairMeans, hess: np.ndarray) -> np.ndarray:
    inverse = np.linalg.inv(hess)
    meat = (z * (means.weight**2 * means.variance)[:, None]).T @ z
    return inverse @ meat @ inverse


def estimate(items: Items, anchor: int, means: PairMeans, lam: float | None = None) -> Estimate:
    z = _reduced(items, anchor)
    theta, hess = fit_abilities(z, means)
    return Estimate(_embed(theta, anchor, matrix=False), _embed(sandwich(z, means, hess), anchor, matrix=True), lam)


def tune_lambda(z: np.ndarray, st: PairStats, hess: np.ndarray) -> float:
    """The lambda in [0, 1] minimising trace(H^-1 [sum_p w_p^2 Var(m_p; lambda) z z^T] H^-1) = sum_p q_p Var(m_p)."""
    a, b, c = _variance_terms(st)
    del a
    q = st.weight**2 * np.sum((z @ np.linalg.inv(hess)) ** 2, axis=1)
    denominator = float(q @ c)
    if denominator <= 0:
        return 0.0
    return float(np.clip(float(q @ b) / denominator, 0.0, 1.0))


def ppi_estimate(items: Items, anchor: int, lam: float | None = None) -> Estimate:
    """PPI++ abilities: lambda power-tuned from the data unless given."""
    st = pair_stats(items)
    if lam is None:
        z = _reduced(items, anchor)
        _, hess = fit_abilities(z, ppi_means(st, 1.0))
        lam = tune_lambda(z, st, hess)
    return estimate(items, anchor, ppi_means(st, lam), lam)


def human_estimate(items: Items, anchor: int) -> Estimate:
    return estimate(items, anchor, human_means(pair_stats(items)))


def judge_estimate(items: Items, anchor: int) -> Estimate:
    return estimate(items, anchor, judge_means(pair_stats(items)))
