"""Krippendorff's alpha and percent agreement on labels of every question kind: the published worked example,
a hand-worked one, its identity with Fleiss' kappa on complete data, and a simulation with known truth (raters who
copy a uniform true label with probability p have alpha p squared); the bootstrap interval covers it."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.agreement import fleiss_kappa_from_counts
from evaluation.label_agreement import krippendorff_alpha, label_agreement, percent_agreement

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: 4 observers, 12 units, values 1-5,
# None where an observer gave no value. Published: nominal .743, ordinal .815, interval .849.
RELIABILITY_DATA = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def _flat(table):
    items, raters, values = [], [], []
    for rater, row in table.items():
        for item, value in enumerate(row):
            items.append(item)
            raters.append(rater)
            values.append(value)
    return items, raters, values


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_the_published_example_gives_the_published_alphas(level, published):
    alpha = krippendorff_alpha(*_flat(RELIABILITY_DATA), level=level, categories=[1, 2, 3, 4, 5])
    assert alpha == pytest.approx(published, abs=5e-4)


def test_a_hand_worked_nominal_example():
    # Items 1 and 3 agree (a,a and b,b), item 2 does not. Coincidences o_aa = o_bb = 2, o_ab = o_ba = 1; n_a = n_b = 3,
    # n = 6: D_o = 2/6, D_e = 2 * 3 * 3 / (6 * 5) = 0.6, alpha = 1 - (1/3) / 0.6 = 4/9. Percent: (1 + 0 + 1) / 3.
    items, raters, values = [1, 1, 2, 2, 3, 3], ["r", "s"] * 3, ["a", "a", "a", "b", "b", "b"]
    assert krippendorff_alpha(items, raters, values) == pytest.approx(4 / 9)
    assert percent_agreement(items, raters, values) == pytest.approx(2 / 3)


def test_first_answer_per_rater_and_item_wins_and_single_answers_are_not_pairable():
    items = [1, 1, 1, 2, 2, 3]
    raters = ["r", "s", "s", "r", "s", "r"]
    values = ["a", "a", "b", "b", "b", "a"]  # s answers item 1 twice: the second answer is dropped
    result = label_agreement(items, raters, values, n_bootstrap=50)
    assert (result.duplicates_dropped, result.n_items, result.n_answers, result.percent) == (1, 2, 4, 1.0)
    assert result.alpha == pytest.approx(1.0)


def test_undefined_figures_are_none():
    assert krippendorff_alpha([1, 1, 2, 2], ["r", "s", "r", "s"], ["a"] * 4) is None  # no expected disagreement
    empty = label_agreement([1, 2], ["r", "r"], ["a", "b"])
    assert (empty.alpha, empty.percent, empty.alpha_interval, empty.n_items) == (None, None, None, 0)


def test_sets_use_the_jaccard_distance_and_equal_nominal_on_single_options():
    items, raters = [1, 1, 2, 2, 3, 3], ["r", "s"] * 3
    singles = [["x"], ["x"], ["x"], ["y"], ["y"], ["y"]]
    assert krippendorff_alpha(items, raters, singles, level="set") == pytest.approx(4 / 9)
    # {x,y} vs {x}: distance 1/2 instead of 1, so partial overlap agrees more than disjoint answers.
    partial = [["x"], ["x"], ["x", "y"], ["x"], ["y"], ["y"]]
    disjoint = [["x"], ["x"], ["y"], ["x"], ["y"], ["y"]]
    assert krippendorff_alpha(items, raters, partial, level="set") > krippendorff_alpha(
        items, raters, disjoint, level="set"
    )
    assert percent_agreement(items, raters, partial) == pytest.approx(2 / 3)


def test_nominal_alpha_is_fleiss_kappa_with_the_small_sample_correction():
    """On complete data (m raters per item, n values): alpha = 1 - (1 - kappa_Fleiss) (n - 1) / n."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        n_items, m = int(rng.integers(5, 30)), int(rng.integers(2, 5))
        labels = rng.integers(0, 3, size=(n_items, m))
        counts = np.stack([(labels == c).sum(axis=1) for c in range(3)], axis=1)
        kappa = fleiss_kappa_from_counts(counts)
        items = np.repeat(np.arange(n_items), m).tolist()
        raters = np.tile(np.arange(m), n_items).tolist()
        alpha = krippendorff_alpha(items, raters, labels.ravel().tolist())
        n = n_items * m
        assert alpha == pytest.approx(1 - (1 - kappa) * (n - 1) / n)


def _simulated(rng, p, n_items=40, raters_per_item=3, n_raters=8, k=4):
    truth = rng.integers(0, k, n_items)
    items, raters, values = [], [], []
    for item in range(n_items):
        for rater in rng.choice(n_raters, raters_per_item, replace=False):
            copies = rng.random() < p
            items.append(item)
            raters.append(int(rater))
            values.append(int(truth[item]) if copies else int(rng.integers(0, k)))
    return items, raters, values


@pytest.mark.parametrize("p", [0.5, 0.8])
def test_simulated_raters_recover_the_known_alpha_and_the_interval_covers_it(p):
    """Small version of scripts/bench_label_agreement.py (1,000 data sets per setting there)."""
    rng = np.random.default_rng(11)
    truth = p * p
    estimates, covered = [], 0
    for replicate in range(120):
        result = label_agreement(*_simulated(rng, p), n_bootstrap=150, seed=replicate)
        estimates.append(result.alpha)
        low, high = result.alpha_interval
        covered += low <= truth <= high
    assert np.mean(estimates) == pytest.approx(truth, abs=0.03)
    assert 0.85 <= covered / 120 <= 1.0


def test_the_bootstrap_is_seeded_and_recorded():
    data = _simulated(np.random.default_rng(1), 0.7)
    first, again = label_agreement(*data, seed=5, n_bootstrap=100), label_agreement(*data, seed=5, n_bootstrap=100)
    assert first == again and "seed=5" in first.signature and "level=nominal" in first.signature
    assert label_agreement(*data, seed=6, n_bootstrap=100).alpha_interval != first.alpha_interval


def test_ordinal_needs_the_category_order_and_refuses_unknown_values():
    with pytest.raises(ValueError, match="categories"):
        krippendorff_alpha([1, 1], ["r", "s"], [1, 2], level="ordinal")
    with pytest.raises(ValueError, match="not among"):
        krippendorff_alpha([1, 1], ["r", "s"], [1, 9], level="ordinal", categories=[1, 2, 3])
