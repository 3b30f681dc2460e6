"""PPI++ Bradley-Terry estimates against independent computations: the item-level PPI++ loss minimised with scipy,
a sandwich built from per-item gradient vectors with np.cov, and a grid search for the power-tuning weight."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from evaluation.ppi.estimate import (
    _reduced,
    fit_abilities,
    human_estimate,
    pair_stats,
    ppi_estimate,
    ppi_means,
    tune_lambda,
)
from evaluation.ppi.simulate import Scenario, simulate

SMALL = Scenario(abilities=(0.0, 0.6, -0.4, 0.3), lengths=(0.0, 1.0, -1.0, 0.5), n_prompts=30, human_fraction=0.4)


@pytest.fixture(scope="module")
def items():
    return simulate(np.random.default_rng(5), SMALL)


def _item_loss(theta_red: np.ndarray, items, lam: float) -> float:
    """The PPI++ loss item by item, per pair: mean human loss + lam (mean judge loss on all items - on labelled)."""
    theta = np.insert(theta_red, 0, 0.0)
    d = theta[items.pair_a[items.pair]] - theta[items.pair_b[items.pair]]

    def loss(label: np.ndarray) -> np.ndarray:  # logistic loss with a fractional label
        return -(label * np.log(expit(d)) + (1 - label) * np.log(expit(-d)))

    total, n = 0.0, len(items.pair)
    lab = items.labelled
    for p in range(len(items.pair_a)):
        here = items.pair == p
        w = here.sum() / n
        human = loss(np.nan_to_num(items.human))[here & lab].mean()
        judge_all, judge_lab = loss(items.judge)[here].mean(), loss(items.judge)[here & lab].mean()
        total += w * (human + lam * (judge_all - judge_lab))
    return total


@pytest.mark.parametrize("lam", [0.0, 0.35, 1.0])
def test_abilities_minimise_the_item_level_ppi_loss(items, lam):
    expected = minimize(_item_loss, np.zeros(3), args=(items, lam), method="BFGS", options={"gtol": 1e-10}).x
    got = ppi_estimate(items, 0, lam=lam).abilities
    assert got[0] == 0.0
    np.testing.assert_allclose(got[1:], expected, atol=1e-5)


def _independent_covariance(items, lam: float, theta: np.ndarray) -> np.ndarray:
    """H^-1 M H^-1 with H by finite differences of the loss gradient and M from per-item gradient vectors."""
    lab, n = items.labelled, len(items.pair)

    def grad(t: np.ndarray) -> np.ndarray:
        step = 1e-6
        return np.array(
            [
                (_item_loss(t + step * e, items, lam) - _item_loss(t - step * e, items, lam)) / (2 * step)
                for e in np.eye(len(t))
            ]
        )

    t = theta[1:]
    hess = np.array([(grad(t + 1e-4 * e) - grad(t - 1e-4 * e)) / 2e-4 for e in np.eye(len(t))])
    d = theta[items.pair_a[items.pair]] - theta[items.pair_b[items.pair]]
    z = np.zeros((n, len(theta)))
    z[np.arange(n), items.pair_a[items.pair]], z[np.arange(n), items.pair_b[items.pair]] = 1.0, -1.0
    z = z[:, 1:]
    g_human = (expit(d) - np.nan_to_num(items.human))[:, None] * z
    g_judge = (expit(d) - items.judge)[:, None] * z
    meat = np.zeros((len(t), len(t)))
    for p in range(len(items.pair_a)):
        here = items.pair == p
        big_n, small_n = here.sum(), (here & lab).sum()
        shrink = lam * (1 - small_n / big_n)
        u = g_human[here & lab] - shrink * g_judge[here & lab]
        v = g_judge[here & ~lab]
        w = big_n / n
        meat += w**2 * (np.cov(u.T) / small_n + shrink**2 * np.cov(v.T) / (big_n - small_n))
    inverse = np.linalg.inv(hess)
    return inverse @ meat @ inverse


@pytest.mark.parametrize("lam", [0.0, 0.5])
def test_sandwich_covariance_matches_per_item_gradients(items, lam):
    e = ppi_estimate(items, 0, lam=lam)
    expected = _independent_covariance(items, lam, e.abilities)
    np.testing.assert_allclose(e.covariance[1:, 1:], expected, rtol=2e-3, atol=1e-7)
    assert np.all(e.covariance[0] == 0) and np.all(e.covariance[:, 0] == 0)


def test_power_tuning_minimises_the_estimated_trace(items):
    st = pair_stats(items)
    z = _reduced(items, 0)
    _, hess = fit_abilities(z, ppi_means(st, 1.0))
    inverse = np.linalg.inv(hess)

    def trace(lam: float) -> float:
        m = ppi_means(st, lam)
        return float(np.trace(inverse @ ((z * (m.weight**2 * m.variance)[:, None]).T @ z) @ inverse))

    grid = np.linspace(0, 1, 1001)
    best = grid[np.argmin([trace(x) for x in grid])]
    assert tune_lambda(z, st, hess) == pytest.approx(best, abs=1e-3)
    assert ppi_estimate(items, 0).lam == pytest.approx(best, abs=1e-3)


def test_a_judge_that_is_pure_noise_gets_almost_no_weight():
    rng = np.random.default_rng(8)
    items = simulate(rng, SMALL)
    noise = rng.choice([0.0, 0.5, 1.0], size=len(items.pair))
    from dataclasses import replace

    e = ppi_estimate(replace(items, judge=noise), 0)
    assert e.lam < 0.2
    human = human_estimate(items, 0)
    assert np.all(e.se <= human.se * 1.05)


def test_a_judge_that_agrees_with_the_humans_gets_weight_near_one_and_narrows_the_intervals():
    rng = np.random.default_rng(9)
    items = simulate(rng, SMALL)
    from dataclasses import replace

    perfect = replace(items, judge=np.where(items.labelled, items.human, items.judge))  # exact on labelled items
    e = ppi_estimate(perfect, 0)
    assert e.lam > 0.9  # 1 up to the sampling noise of the variances
    assert np.all(e.se[1:] < human_estimate(perfect, 0).se[1:])
