"""The anytime-valid sequential test: error control under continuous monitoring, early stops under an effect."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import beta as beta_dist
from scipy.stats import binom, binomtest

from evaluation.irt.sequential import SequentialTest, decision_boundary, first_decision, log_evalues

ALPHA = 0.05


def _outcomes(rng: np.random.Generator, shape: tuple[int, int], p_a: float, p_tie: float) -> np.ndarray:
    return rng.choice(np.array([1, -1, 0], dtype=np.int8), size=shape, p=[p_a, 1 - p_a - p_tie, p_tie])


def _max_false_rejections(n_runs: int, alpha: float) -> int:
    """Upper 99.9% binomial quantile of the rejection count for a test of level alpha."""
    return int(binom.ppf(0.999, n_runs, alpha))


@pytest.mark.parametrize(("wins", "losses", "prior"), [(0, 0, 1.0), (7, 2, 1.0), (30, 41, 1.0), (12, 5, 10.0)])
def test_evalues_equal_the_mixture_integral(wins, losses, prior):
    """Golden values by numerical integration of the likelihood ratio over the truncated Beta prior."""

    def mixture(lower: float, upper: float, w: int, n_l: int) -> float:
        mass = beta_dist.cdf(upper, prior, prior) - beta_dist.cdf(lower, prior, prior)
        ratio = quad(lambda p: (2 * p) ** w * (2 * (1 - p)) ** n_l * beta_dist.pdf(p, prior, prior), lower, upper)[0]
        return ratio / mass

    log_e_a, log_e_b = log_evalues(np.array(wins), np.array(losses), prior=prior)
    assert np.exp(log_e_a) == pytest.approx(mixture(0.5, 1.0, wins, losses), rel=1e-6)
    assert np.exp(log_e_b) == pytest.approx(mixture(0.0, 0.5, wins, losses), rel=1e-6)


def test_boundary_is_where_the_evalue_crosses():
    boundary = decision_boundary(400, alpha=ALPHA)
    n = np.arange(401)
    decidable = boundary <= n
    at, _ = log_evalues(boundary[decidable], n[decidable] - boundary[decidable])
    below, _ = log_evalues(boundary[decidable] - 1, n[decidable] - boundary[decidable] + 1)
    assert np.all(at >= np.log(2 / ALPHA))
    assert np.all(below < np.log(2 / ALPHA))
    assert not decidable[:5].any()  # four straight wins are not yet evidence at 5%


def test_type_one_error_under_continuous_monitoring():
    """p = 1/2, looked at after every judgement up to 2,000: rejections stay within alpha (binomial tolerance),
    while the fixed-sample binomial test, monitored the same way, rejects far more often."""
    rng = np.random.default_rng(0)
    n_runs, horizon = 2000, 2000
    x = _outcomes(rng, (n_runs, horizon), p_a=0.4, p_tie=0.2)
    decision, _ = first_decision(x, alpha=ALPHA)
    rejections = int(np.count_nonzero(decision))
    print(f"sequential test: {rejections}/{n_runs} false rejections at alpha={ALPHA}")
    assert rejections <= _max_false_rejections(n_runs, ALPHA)

    naive = 0
    for row in x[:200]:
        decisive = row[row != 0]
        looks = np.arange(10, len(decisive), 10)
        wins = np.cumsum(decisive == 1)[looks - 1]
        # two-sided exact binomial p-value at p = 1/2 (symmetric), as scipy.stats.binomtest computes it
        pvalues = np.minimum(1.0, 2 * np.minimum(binom.cdf(wins, looks, 0.5), binom.sf(wins - 1, looks, 0.5)))
        naive += bool(np.any(pvalues < ALPHA))
    assert binomtest(7, 20).pvalue == pytest.approx(min(1.0, 2 * binom.cdf(7, 20, 0.5)))
    print(f"binomial test peeked every 10 judgements: {naive}/200 false rejections")
    assert naive > _max_false_rejections(200, ALPHA)


def test_wrong_direction_is_rare_under_a_one_sided_null():
    """A slightly worse than B (p = 0.45): deciding "A better" stays within alpha / 2."""
    rng = np.random.default_rng(1)
    x = _outcomes(rng, (2000, 1500), p_a=0.45 * 0.9, p_tie=0.1)
    decision, _ = first_decision(x, alpha=ALPHA)
    assert np.count_nonzero(decision == 1) <= _max_false_rejections(2000, ALPHA / 2)


def test_stops_early_under_an_alternative():
    """p = 0.7 among decisive judgements: nearly every run decides A, long before the budget."""
    rng = np.random.default_rng(2)
    budget = 1000
    x = _outcomes(rng, (1000, budget), p_a=0.7 * 0.8, p_tie=0.2)
    decision, used = first_decision(x, alpha=ALPHA, budget=budget)
    print(f"p=0.7: decided A in {np.mean(decision == 1):.3f} of runs, mean judgements {used.mean():.0f}/{budget}")
    assert np.mean(decision == 1) >= 1 - ALPHA
    assert np.count_nonzero(decision == -1) <= _max_false_rejections(1000, ALPHA / 2)
    assert np.median(used) < budget / 4


def test_budget_counts_ties_and_leaves_undecided():
    test = SequentialTest(alpha=ALPHA, budget=30)
    consumed = test.update(np.array([1, -1, 0] * 20, dtype=np.int8))
    assert consumed == 30 and test.used == 30 and test.ties == 10
    assert test.done and test.decision is None
    assert test.update([1] * 10) == 0


def test_rounds_and_one_at_a_time_agree_with_the_vectorised_run():
    rng = np.random.default_rng(3)
    x = _outcomes(rng, (300, 400), p_a=0.5, p_tie=0.2)
    decision, used = first_decision(x, alpha=ALPHA)
    for row, expected_decision, expected_used in zip(x, decision, used, strict=True):
        in_rounds, one_by_one = SequentialTest(alpha=ALPHA), SequentialTest(alpha=ALPHA)
        consumed = sum(in_rounds.update(row[start : start + 30]) for start in range(0, len(row), 30))
        for value in row:
            one_by_one.update([value])
        label = {1: "A", -1: "B", 0: None}[int(expected_decision)]
        assert in_rounds.decision == one_by_one.decision == label
        assert consumed == in_rounds.used == one_by_one.used == expected_used
