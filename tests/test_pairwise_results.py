"""Win/tie/loss summaries against hand-worked counts, statsmodels' Wilson interval, an exact sign test computed
here from the binomial distribution, a coverage simulation with a known win rate, and property tests."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from evaluation.pairwise_results import encode_outcomes, summarize, wilson_interval

outcome_lists = st.lists(st.sampled_from(["A", "tie", "B"]), max_size=60)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test: by symmetry of Binomial(n, 1/2), twice the smaller tail, capped at 1."""
    n = wins + losses
    return min(1.0, 2 * binom.cdf(min(wins, losses), n, 0.5))


def test_hand_worked_counts_and_rates():
    summary = summarize(["A", "A", "A", "B", "tie", "tie"])
    assert (summary.wins, summary.ties, summary.losses, summary.n) == (3, 2, 1, 6)
    assert summary.win_rate == pytest.approx(3 / 4)  # ties dropped
    assert summary.win_rate_tie_half == pytest.approx((3 + 1) / 6)
    assert summary.net_win_rate == pytest.approx((3 - 1) / 6)
    assert summary.win_rate_margin == pytest.approx(0.25)
    # P(X <= 1 | n=4, p=1/2) = 5/16, two-sided 10/16.
    assert summary.p_value == pytest.approx(10 / 16)


def test_numeric_and_string_encodings_agree():
    strings = ["A", "tie", "B", "B", "A"]
    numbers = [1, 0, -1, -1, 1]
    assert summarize(strings) == summarize(numbers) == summarize(np.array(numbers))
    assert encode_outcomes(strings).tolist() == [0, 1, 2, 2, 0]


@pytest.mark.parametrize("bad", ["left", "a", None, 2, True, "both_good"])
def test_unknown_outcomes_are_refused(bad):
    with pytest.raises(ValueError, match="position 1"):
        summarize(["A", bad])


def test_numpy_array_with_other_values_is_refused():
    with pytest.raises(ValueError, match="position 2"):
        encode_outcomes(np.array([1, 0, 5]))


@pytest.mark.parametrize("confidence", [0, 1, 1.5])
def test_confidence_must_be_a_proportion(confidence):
    with pytest.raises(ValueError, match="confidence"):
        summarize(["A"], confidence=confidence)


def test_nothing_to_summarise():
    summary = summarize([])
    assert summary.n == 0
    assert summary.win_rate is None and summary.win_rate_ci is None and summary.p_value is None
    assert summary.win_rate_tie_half is None and summary.net_win_rate is None


def test_only_ties():
    summary = summarize(["tie"] * 5)
    assert summary.win_rate is None and summary.p_value is None and summary.win_rate_ci is None
    assert summary.win_rate_tie_half == 0.5
    assert summary.net_win_rate == 0.0


@pytest.mark.parametrize(("wins", "ties", "losses"), [(0, 0, 7), (7, 0, 0), (12, 5, 30), (55, 20, 45), (1, 0, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_intervals_match_statsmodels_wilson(wins, ties, losses, confidence):
    summary = summarize(["A"] * wins + ["tie"] * ties + ["B"] * losses, confidence=confidence)
    alpha = 1 - confidence
    expected = proportion_confint(wins, wins + losses, alpha=alpha, method="wilson")
    assert summary.win_rate_ci == pytest.approx(expected, abs=1e-12)
    n = wins + ties + losses
    expected_half = proportion_confint(wins + ties / 2, n, alpha=alpha, method="wilson")
    assert summary.win_rate_tie_half_ci == pytest.approx(expected_half, abs=1e-12)
    assert summary.p_value == pytest.approx(sign_test_p(wins, losses), rel=1e-9)


def test_wilson_interval_covers_a_known_win_rate():
    """Simulation with known truth: about 95% of 95% intervals contain the true rate."""
    rng = np.random.default_rng(7)
    truth, n = 0.3, 80
    wins = rng.binomial(n, truth, size=4000)
    intervals = [wilson_interval(int(k), n) for k in wins]
    covered = np.mean([low <= truth <= high for low, high in intervals])  # type: ignore[misc]
    assert 0.93 <= covered <= 0.97


def test_a_clear_winner_is_significant_and_a_coin_is_not():
    rng = np.random.default_rng(3)
    strong = summarize(rng.choice(["A", "B", "tie"], size=400, p=[0.55, 0.25, 0.2]).tolist())
    assert strong.p_value is not None and strong.p_value < 1e-6
    assert strong.win_rate_ci is not None and strong.win_rate_ci[0] > 0.5
    coin = summarize(["A", "B"] * 100)
    assert coin.p_value == 1.0 and coin.win_rate == 0.5


@given(outcome_lists)
def test_properties(outcomes):
    summary = summarize(outcomes)
    assert summary.wins + summary.ties + summary.losses == summary.n == len(outcomes)
    for rate, ci in (
        (summary.win_rate, summary.win_rate_ci),
        (summary.win_rate_tie_half, summary.win_rate_tie_half_ci),
    ):
        if rate is None:
            assert ci is None
        else:
            assert ci is not None and 0 <= ci[0] <= rate + 1e-12 and rate - 1e-12 <= ci[1] <= 1
    # Swapping the systems mirrors the rates and keeps the test.
    swapped = summarize([{"A": "B", "B": "A"}.get(o, o) for o in outcomes])
    if summary.win_rate is not None:
        assert swapped.win_rate == pytest.approx(1 - summary.win_rate)
        assert swapped.p_value == pytest.approx(summary.p_value)


def test_to_dict_is_json_and_carries_the_signature():
    data = summarize(["A", "B", "tie", "A"]).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["win_rate_ci"] == list(summarize(["A", "B", "tie", "A"]).win_rate_ci)
    assert "wilson" in data["signature"] and "confidence=0.95" in data["signature"]
