"""Spending human votes where the judge is unsure: sampling probabilities that favour items whose judge verdict
changed when the two responses swapped sides, and the inverse-probability-weighted PPI estimate that stays
unbiased for the human target whatever the probabilities (active inference, Zrnic and Candes 2024).

Each item i is sent to humans independently with probability pi_i (Poisson sampling; xi_i = 1 when it was). Per
pair, the mean human preference is estimated by the mean over all the pair's items of
    phi_i = lam f_i + (xi_i / pi_i) (y_i - lam f_i),
whose expectation is the item's human preference for any lam and any pi_i > 0; its variance is estimated by the
sample variance of phi over the pair's items / N_p. lam is power-tuned as in evaluation.ppi.estimate.
"""

from __future__ import annotations

import numpy as np

from evaluation.ppi.estimate import Estimate, PairMeans, _reduced, estimate, fit_abilities
from evaluation.ppi.items import Items

MIN_PROBABILITY = 1e-3


def inconsistency(items: Items) -> np.ndarray:
    """(n,) |verdict with A on the left - verdict with B on the left| in [0, 1]: 1 when the verdict flipped with
    the sides, 0.5 when one order gave a tie; items without both orders get the mean of those with both."""
    u = np.abs(items.judge_left_a - items.judge_left_b) if len(items.judge_left_a) else np.full(len(items.pair), np.nan)
    known = np.isfinite(u)
    return np.where(known, u, float(u[known].mean()) if known.any() else 0.0)


def _cap(weight: np.ndarray, budget: float) -> np.ndarray:
    """Probabilities proportional to weight summing to budget, none above 1 (the excess spread over the rest)."""
    pi = np.zeros_like(weight)
    free = np.ones(len(weight), dtype=bool)
    left = budget
    for _ in range(len(weight)):
        pi[free] = left * weight[free] / weight[free].sum()
        over = free & (pi > 1)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
        left = budget - float(pi[~free].sum())
    return np.clip(pi, MIN_PROBABILITY, 1.0)


def sampling_probabilities(items: Items, budget: float, *, boost: float = 3.0) -> np.ndarray:
    """(n,) inclusion probabilities with expected total `budget`, split over pairs in proportion to their items
    (as a uniform design would), and within a pair proportional to 1 + (boost - 1) * inconsistency: an item whose
    verdict flipped with the sides is `boost` times as likely to get human votes. boost = 1 is uniform;
    suggest_boost estimates the best one from a pilot."""
    if not 0 < budget <= len(items.pair):
        raise ValueError(f"budget must be in (0, {len(items.pair)}], got {budget}")
    if not 0 < boost <= 100:
        raise ValueError(f"boost must be in (0, 100], got {boost}")
    weight = 1.0 + (boost - 1.0) * inconsistency(items)
    pi = np.empty(len(items.pair))
    share = budget / len(items.pair)
    for p in range(len(items.pair_a)):
        members = items.pair == p
        pi[members] = _cap(weight[members], share * int(members.sum()))
    return pi


def _pair_moments(items: Items, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    size = len(items.pair_a)
    count = np.bincount(items.pair, minlength=size).astype(float)
    ma, mb = np.bincount(items.pair, a, minlength=size) / count, np.bincount(items.pair, b, minlength=size) / count
    da, db = a - ma[items.pair], b - mb[items.pair]
    denominator = np.maximum(count - 1, 1.0)
    s_aa = np.bincount(items.pair, da * da, minlength=size) / denominator
    s_ab = np.bincount(items.pair, da * db, minlength=size) / denominator
    s_bb = np.bincount(items.pair, db * db, minlength=size) / denominator
    return count, ma, mb, s_aa, s_ab, s_bb


def ipw_means(items: Items, pi: np.ndarray, lam: float) -> PairMeans:
    """Per pair: the mean of phi over the pair's items and its variance (sample variance of phi / N_p)."""
    count, moments = _phi_parts(items, pi)
    ma, mb, s_aa, s_ab, s_bb = moments
    return PairMeans(count / count.sum(), ma + lam * mb, np.maximum(s_aa + 2 * lam * s_ab + lam**2 * s_bb, 0.0) / count)


def _phi_parts(items: Items, pi: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Item counts per pair and the moments of phi = a + lam b: (mean a, mean b, var a, cov ab, var b)."""
    if len(pi) != len(items.pair) or np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("pi must give every item a probability in (0, 1]")
    weight_h = np.where(items.labelled, 1.0 / pi, 0.0)
    a = weight_h * np.nan_to_num(items.human)  # phi = a + lam b
    b = items.judge * (1.0 - weight_h)
    count, *moments = _pair_moments(items, a, b)
    return count, tuple(moments)


def ipw_estimate(items: Items, pi: np.ndarray, anchor: int, lam: float | None = None) -> Estimate:
    """PPI abilities from items whose human votes were drawn with probabilities pi (items.labelled = drawn)."""
    if lam is None:
        count, (_, _, _, s_ab, s_bb) = _phi_parts(items, pi)
        z = _reduced(items, anchor)
        start = ipw_means(items, pi, 1.0)
        _, hess = fit_abilities(z, start)
        q = start.weight**2 * np.sum((z @ np.linalg.inv(hess)) ** 2, axis=1) / count
        denominator = float(q @ s_bb)
        lam = float(np.clip(-float(q @ s_ab) / denominator, 0.0, 1.0)) if denominator > 0 else 0.0
    return estimate(items, anchor, ipw_means(items, pi, lam), lam)


def suggest_boost(items: Items, lam: float = 1.0) -> float:
    """The boost the labelled items support: sqrt(mean (y - lam f)^2 on items whose verdict flipped / on consistent
    ones), the ratio of sampling probabilities between the two classes that minimises the variance of phi under
    Poisson sampling (pi proportional to the root mean squared residual). Below 1 when the judge's consistent
    verdicts are where it disagrees with humans most."""
    lab = items.labelled
    residual = np.nan_to_num(items.human) - lam * items.judge
    u = inconsistency(items)
    flipped, steady = lab & (u >= 1.0), lab & (u <= 0.0)
    if flipped.sum() < 2 or steady.sum() < 2:
        return 1.0
    return float(np.sqrt(np.mean(residual[flipped] ** 2) / max(np.mean(residual[steady] ** 2), 1e-12)))
