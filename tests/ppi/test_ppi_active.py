"""Active sampling (evaluation.ppi.active): probabilities favouring items whose judge verdict flipped with the sides,
and the inverse-probability-weighted PPI estimate, unbiased whatever the probabilities."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from evaluation.ppi.active import inconsistency, ipw_estimate, ipw_means, sampling_probabilities, suggest_boost
from evaluation.ppi.report import wald_intervals
from evaluation.ppi.simulate import Scenario, simulate, truth

FULL = Scenario(human_fraction=1.0, n_prompts=60)  # humans on every item; the draws below choose which to keep


def _draw(items, pi, rng):
    xi = rng.random(len(pi)) < pi
    return replace(items, human=np.where(xi, items.human, np.nan), human_votes=np.where(xi, items.human_votes, 0))


def test_probabilities_follow_the_budget_and_the_boost():
    items = simulate(np.random.default_rng(1), FULL)
    u = inconsistency(items)
    assert set(np.unique(u)) <= {0.0, 0.5, 1.0} and (u == 1).any() and (u == 0).any()
    pi = sampling_probabilities(items, 0.1 * len(items.pair), boost=3.0)
    per_pair = np.bincount(items.pair, pi)
    np.testing.assert_allclose(per_pair, 0.1 * np.bincount(items.pair))
    for p in range(len(items.pair_a)):
        here = items.pair == p
        flipped, steady = pi[here & (u == 1)], pi[here & (u == 0)]
        if len(flipped) and len(steady):
            assert flipped[0] == pytest.approx(3 * steady[0])
    assert np.all(sampling_probabilities(items, 0.9 * len(items.pair), boost=10.0) <= 1.0)
    np.testing.assert_allclose(sampling_probabilities(items, 30, boost=1.0), 30 / len(items.pair))
    with pytest.raises(ValueError, match="budget"):
        sampling_probabilities(items, 0)


def test_the_weighted_pair_means_are_unbiased_for_the_full_data_means():
    # Design-unbiasedness: over repeated draws from one data set, the mean of phi averages to the pair's
    # full-data human mean, for any lambda, although inconsistent items are three times as likely to be drawn.
    items = simulate(np.random.default_rng(2), FULL)
    pi = sampling_probabilities(items, 0.15 * len(items.pair), boost=3.0)
    full = np.bincount(items.pair, items.human) / np.bincount(items.pair)
    rng = np.random.default_rng(3)
    draws = np.array([ipw_means(_draw(items, pi, rng), pi, 0.7).mean for _ in range(3000)])
    spread = draws.std(axis=0) / math.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - full) <= 4 * spread)
    # and the variance formula matches the spread of the draws (a superpopulation formula, so a little larger)
    predicted = np.sqrt(np.mean([ipw_means(_draw(items, pi, rng), pi, 0.7).variance for _ in range(300)], axis=0))
    assert np.all(predicted >= 0.9 * draws.std(axis=0))


@pytest.mark.parametrize(("label", "boost"), [("uniform", 1.0), ("inconsistent items x3", 3.0)])
def test_coverage_stays_nominal_with_weighted_sampling(label, boost):
    n, level = 400, 0.95
    target = truth(FULL)
    rng = np.random.default_rng(11)
    hits, widths = [], []
    for _ in range(n):
        full = simulate(rng, FULL)
        pi = sampling_probabilities(full, 0.1 * len(full.pair), boost=boost)
        e = ipw_estimate(_draw(full, pi, rng), pi, 0)
        low, high = wald_intervals(e, level)[1:].T
        hits.append((low <= target[1:]) & (target[1:] <= high))
        widths.append(high - low)
    coverage = float(np.mean(hits))
    print(f"\n{label}: coverage {coverage:.3f}, mean width {np.mean(widths):.4f}")
    assert abs(coverage - level) <= 3.3 * math.sqrt(level * (1 - level) / n)


@pytest.mark.parametrize("guess", [0.0, 0.4])
def test_suggested_boost_estimates_the_full_data_residual_ratio_from_a_pilot(guess):
    # Finding: a verdict that flips with the sides averages to 0.5, a hedged prediction whose residual y - f is
    # small; the large residuals are on confident verdicts that are wrong. So the best boost is near or below 1,
    # and a pilot of 20% of the items says so.
    full = simulate(np.random.default_rng(4), replace(FULL, judge_guess=guess, human_votes=5, n_prompts=300))
    u = inconsistency(full)
    residual = full.human - full.judge
    ratio = math.sqrt(np.mean(residual[u == 1] ** 2) / np.mean(residual[u == 0] ** 2))
    pilot = _draw(full, np.full(len(full.pair), 0.2), np.random.default_rng(5))
    assert suggest_boost(pilot) == pytest.approx(ratio, abs=0.12)
    assert ratio < 1.05
