"""Kappas against scikit-learn's cohen_kappa_score and statsmodels' fleiss_kappa on random and edge-case data,
hand-worked examples, and property tests (symmetric, within [-1, 1], 1 for identical raters)."""

from __future__ import annotations

import itertools
import warnings
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from evaluation.agreement import (
    agreement,
    fleiss_kappa,
    pairwise_cohen_kappa,
    rater_pair_kappas,
    weighted_cohen_kappa,
)

LABELS = ["A", "tie", "B"]
CODE = {"A": 0, "tie": 1, "B": 2}


def sk_kappa(x, y, weights):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns before returning NaN for undefined kappas
        value = cohen_kappa_score(x, y, weights=weights, labels=LABELS)
    return None if np.isnan(value) else float(value)


def random_design(rng, n_items=40, n_raters=9, per_item=3, duplicate_share=0.1, skew=(0.4, 0.2, 0.4)):
    """Each item judged by `per_item` random raters, plus some repeated judgements of the same rater."""
    items, raters, labels = [], [], []
    for item in range(n_items):
        for rater in rng.choice(n_raters, size=per_item, replace=False):
            items.append(f"p{item}")
            raters.append(f"r{rater}")
            labels.append(str(rng.choice(LABELS, p=skew)))
            if rng.random() < duplicate_share:
                items.append(f"p{item}")
                raters.append(f"r{rater}")
                labels.append(str(rng.choice(LABELS)))
    return items, raters, labels


def independent_pair_kappas(items, raters, labels, weights="linear", min_common=2):
    """Plain-Python reference: first judgement per (rater, item), sklearn kappa per co-rating pair."""
    first: dict[str, dict[str, str]] = defaultdict(dict)
    for item, rater, label in zip(items, raters, labels, strict=True):
        if rater is not None:
            first[rater].setdefault(item, label)
    result = {}
    for a, b in itertools.combinations(sorted(first), 2):
        common = sorted(set(first[a]) & set(first[b]))
        if len(common) >= min_common:
            result[(a, b)] = (
                len(common),
                sk_kappa([first[a][i] for i in common], [first[b][i] for i in common], weights),
            )
    return result


def test_hand_worked_linear_kappa():
    # Disagreement weights: A-tie 1/2, tie-B 1/2, A-B 1. Observed: (A,tie) + (tie,B) = 1/2 + 1/2 = 1.
    # Marginals x = (A 2, tie 1, B 1), y = (A 1, tie 1, B 2); expected weighted disagreement
    # (0.5*2*1 + 1*2*2 + 0.5*1*1 + 0.5*1*2 + 1*1*1 + 0.5*1*1) / 4 = 2, so kappa = 1 - 1/2.
    assert weighted_cohen_kappa(["A", "B", "tie", "A"], ["A", "B", "B", "tie"]) == pytest.approx(0.5)


def test_tie_is_the_middle_category():
    # Same confusion counts, but A-vs-tie disagreements are half as bad as A-vs-B ones.
    near = weighted_cohen_kappa(["A", "A", "B", "B", "tie"], ["tie", "A", "B", "B", "tie"])
    far = weighted_cohen_kappa(["A", "A", "B", "B", "tie"], ["B", "A", "B", "B", "tie"])
    assert near is not None and far is not None and near > far


@pytest.mark.parametrize("weights", ["linear", "quadratic", None])
@pytest.mark.parametrize("seed", range(6))
def test_cohen_matches_sklearn_on_random_raters(weights, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 200))
    x = rng.choice(LABELS, size=n, p=rng.dirichlet(np.ones(3))).tolist()
    y = [label if rng.random() < 0.5 else str(rng.choice(LABELS)) for label in x]
    expected = sk_kappa(x, y, weights)
    actual = weighted_cohen_kappa(x, y, weights=weights)
    assert (actual is None) == (expected is None)
    if expected is not None:
        assert actual == pytest.approx(expected, abs=1e-12)


def test_numeric_labels_give_the_same_kappa():
    x, y = ["A", "tie", "B", "B", "A"], ["A", "B", "B", "tie", "tie"]
    to_number = {"A": 1, "tie": 0, "B": -1}
    assert weighted_cohen_kappa([to_number[v] for v in x], np.array([to_number[v] for v in y])) == pytest.approx(
        weighted_cohen_kappa(x, y)
    )


@pytest.mark.parametrize(
    ("x", "y"),
    [(["A", "A", "A"], ["A", "A", "A"]), (["tie"], ["tie"]), ([], [])],
)
def test_undefined_kappa_is_none(x, y):
    if x:
        assert sk_kappa(x, y, "linear") is None  # sklearn agrees it is undefined (NaN)
    assert weighted_cohen_kappa(x, y) is None


def test_one_rater_constant_gives_zero_not_undefined():
    # Expected disagreement > 0 as soon as the other rater varies; observed equals expected, so kappa = 0.
    assert weighted_cohen_kappa(["A", "A", "A", "A"], ["A", "B", "tie", "A"]) == pytest.approx(
        sk_kappa(["A", "A", "A", "A"], ["A", "B", "tie", "A"], "linear")
    )


def test_bad_inputs():
    with pytest.raises(ValueError, match="different numbers"):
        weighted_cohen_kappa(["A"], ["A", "B"])
    with pytest.raises(ValueError, match="weights"):
        weighted_cohen_kappa(["A", "B"], ["A", "B"], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="differ in length"):
        pairwise_cohen_kappa(["p1"], ["r1", "r2"], ["A"])
    with pytest.raises(ValueError, match="min_common"):
        pairwise_cohen_kappa(["p1"], ["r1"], ["A"], min_common=0)
    with pytest.raises(ValueError, match="position 0"):
        pairwise_cohen_kappa(["p1"], ["r1"], ["better"])


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
@pytest.mark.parametrize("min_common", [1, 2, 5])
@pytest.mark.parametrize("seed", range(4))
def test_pairwise_kappa_matches_sklearn_over_the_same_pairs(weights, min_common, seed):
    items, raters, labels = random_design(np.random.default_rng(seed))
    raters[3] = None  # an automatic tie: no rater, left out
    reference = independent_pair_kappas(items, raters, labels, weights, min_common)
    pairs = rater_pair_kappas(items, raters, labels, weights=weights, min_common=min_common)
    got = {
        tuple(sorted((a, b))): (int(n), None if np.isnan(k) else float(k))
        for a, b, n, k in zip(pairs.rater_a, pairs.rater_b, pairs.n_common, pairs.kappa, strict=True)
    }
    assert set(got) == set(reference)
    for key, (n, kappa) in reference.items():
        assert got[key][0] == n
        assert (got[key][1] is None) == (kappa is None)
        if kappa is not None:
            assert got[key][1] == pytest.approx(kappa, abs=1e-12)
    defined = [(n, k) for n, k in reference.values() if k is not None]
    plain = pairwise_cohen_kappa(items, raters, labels, weights=weights, min_common=min_common)
    assert plain == pytest.approx(np.mean([k for _, k in defined]), abs=1e-12)
    by_items = pairwise_cohen_kappa(items, raters, labels, weights=weights, min_common=min_common, weighting="items")
    assert by_items == pytest.approx(sum(n * k for n, k in defined) / sum(n for n, _ in defined), abs=1e-12)


def test_pairwise_kappa_hand_worked_with_a_repeat():
    # r1 and r2 share p1..p4; r1's second judgement of p1 is ignored (first one counts). r3 shares only p1.
    items = ["p1", "p2", "p3", "p4", "p1", "p1", "p2", "p3", "p4", "p1"]
    raters = ["r1", "r1", "r1", "r1", "r1", "r2", "r2", "r2", "r2", "r3"]
    labels = ["A", "B", "tie", "A", "B", "A", "B", "B", "tie", "A"]
    # r1 = A B tie A, r2 = A B B tie: the hand-worked 0.5 above. r3 has 1 common item: below min_common=2.
    assert pairwise_cohen_kappa(items, raters, labels) == pytest.approx(0.5)
    summary = agreement(items, raters, labels)
    assert summary.with_excluded.duplicates_dropped == 1
    assert summary.with_excluded.rater_pairs == 1


def test_no_pairs_gives_none():
    assert pairwise_cohen_kappa(["p1", "p2"], ["r1", "r2"], ["A", "B"]) is None
    assert pairwise_cohen_kappa([], [], []) is None


def fleiss_reference(items, labels, ratings_per_item):
    by_item = defaultdict(list)
    for item, label in zip(items, labels, strict=True):
        by_item[item].append(CODE[label])
    rows = [v for v in by_item.values() if len(v) == ratings_per_item]
    table, _ = aggregate_raters(np.array(rows), n_cat=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = sm_fleiss_kappa(table, method="fleiss")
    return None if np.isnan(value) else float(value), len(rows), len(by_item) - len(rows)


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    per_item = int(rng.integers(2, 6))
    items, _, labels = random_design(rng, n_items=60, per_item=per_item, duplicate_share=0.0)
    # A few items with another number of ratings, to be dropped and counted.
    items += ["odd1", "odd2", "odd2"]
    labels += ["A", "B", "tie"]
    result = fleiss_kappa(items, labels)
    expected, kept, dropped = fleiss_reference(items, labels, per_item)
    assert result.ratings_per_item == per_item
    assert (result.n_items, result.items_dropped) == (kept, dropped) == (60, 2)
    assert result.kappa == pytest.approx(expected, abs=1e-12)


def test_fleiss_hand_worked():
    # Two items, 3 ratings: (A, A, B) and (B, B, tie). Agreement per item: (2*1 + 0) / 6 = 1/3 each.
    # Category shares over 6 ratings: A 2/6, tie 1/6, B 3/6 -> P_e = (4 + 1 + 9) / 36 = 14/36.
    # kappa = (1/3 - 14/36) / (1 - 14/36) = (12 - 14) / (36 - 14) = -1/11.
    result = fleiss_kappa(["i1"] * 3 + ["i2"] * 3, ["A", "A", "B", "B", "B", "tie"])
    assert result.kappa == pytest.approx(-1 / 11)


def test_fleiss_degenerate_cases():
    assert fleiss_kappa(["i1", "i1", "i2", "i2"], ["A", "A", "A", "A"]).kappa is None  # one category only
    nothing = fleiss_kappa(["i1", "i2"], ["A", "B"])  # every item has a single rating
    assert (nothing.kappa, nothing.ratings_per_item, nothing.n_items, nothing.items_dropped) == (None, None, 0, 2)
    assert fleiss_kappa([], []).kappa is None
    with pytest.raises(ValueError, match="ratings_per_item"):
        fleiss_kappa(["i1"], ["A"], ratings_per_item=1)


def test_fleiss_chooses_the_most_common_count_and_can_be_told():
    items = ["a"] * 2 + ["b"] * 2 + ["c"] * 3
    labels = ["A", "B", "A", "A", "A", "B", "tie"]
    default = fleiss_kappa(items, labels)
    assert (default.ratings_per_item, default.n_items, default.items_dropped) == (2, 2, 1)
    chosen = fleiss_kappa(items, labels, ratings_per_item=3)
    assert (chosen.n_items, chosen.items_dropped) == (1, 2)


def test_agreement_with_and_without_excluded():
    rng = np.random.default_rng(11)
    items, raters, labels = random_design(rng, n_items=80, n_raters=8)
    bad = {"r2", "r5"}
    mask = [r in bad for r in raters]
    by_mask = agreement(items, raters, labels, excluded=mask)
    by_set = agreement(items, raters, labels, excluded=bad)
    assert by_mask == by_set
    kept = [i for i, m in enumerate(mask) if not m]
    filtered = [[seq[i] for i in kept] for seq in (items, raters, labels)]
    assert by_mask.without_excluded.cohen_kappa == pytest.approx(pairwise_cohen_kappa(*filtered), abs=1e-12)
    assert by_mask.with_excluded.cohen_kappa == pytest.approx(pairwise_cohen_kappa(items, raters, labels), abs=1e-12)
    assert by_mask.excluded_judgements == sum(mask)
    assert by_mask.without_excluded.n_raters == 6 and by_mask.with_excluded.n_raters == 8
    # Fleiss inside `agreement` uses one judgement per rater and item.
    first = {}
    for item, rater, label in zip(items, raters, labels, strict=True):
        first.setdefault((item, rater), label)
    expected, kept_items, _ = fleiss_reference([i for i, _ in first], list(first.values()), 3)
    assert by_mask.with_excluded.fleiss_kappa == pytest.approx(expected, abs=1e-12)
    assert by_mask.with_excluded.fleiss_items == kept_items
    assert agreement(items, raters, labels).without_excluded == by_mask.with_excluded


def test_agreement_summary_serialises_with_signature():
    summary = agreement(["p1", "p1", "p2", "p2"], ["r1", "r2", "r1", "r2"], ["A", "A", "B", "tie"])
    data = summary.to_dict()
    assert data["with_excluded"]["cohen_kappa"] == summary.with_excluded.cohen_kappa
    assert "cohen-weights=linear" in data["signature"] and "cohen-mean=pairs" in data["signature"]
    with pytest.raises(ValueError, match="excluded has 1 entries"):
        agreement(["p1", "p2"], ["r1", "r2"], ["A", "B"], excluded=[True])


def test_excluded_accepts_masks_and_sets_but_not_lists_of_rater_ids():
    items, raters, labels = ["p1", "p1", "p2", "p2"], ["r1", "r2", "r1", "r2"], ["A", "A", "B", "tie"]
    by_set = agreement(items, raters, labels, excluded=frozenset({"r2"}))
    assert agreement(items, raters, labels, excluded=np.array([False, True, False, True])) == by_set
    assert agreement(items, raters, labels, excluded=(False, True, False, True)) == by_set
    assert by_set.excluded_judgements == 2
    with pytest.raises(ValueError, match="boolean mask or a set of excluded rater ids"):
        agreement(items, raters, labels, excluded=["r2", "r2", "r2", "r2"])
    with pytest.raises(ValueError, match="boolean mask or a set of excluded rater ids"):
        agreement(items, raters, labels, excluded=np.array([0, 1, 0, 1]))


labels_strategy = st.sampled_from(LABELS)
paired = st.lists(st.tuples(labels_strategy, labels_strategy), min_size=1, max_size=40)


@given(paired, st.sampled_from(["linear", "quadratic", None]))
def test_kappa_is_symmetric_and_bounded(pairs, weights):
    x, y = [a for a, _ in pairs], [b for _, b in pairs]
    kappa = weighted_cohen_kappa(x, y, weights=weights)
    mirrored = weighted_cohen_kappa(y, x, weights=weights)
    assert (kappa is None) == (mirrored is None)
    if kappa is not None:
        assert kappa == pytest.approx(mirrored, abs=1e-12)
        assert -1 - 1e-9 <= kappa <= 1 + 1e-9


@given(st.lists(labels_strategy, min_size=2, max_size=40), st.sampled_from(["linear", "quadratic", None]))
def test_identical_raters_agree_perfectly(x, weights):
    kappa = weighted_cohen_kappa(x, x, weights=weights)
    if len(set(x)) == 1:
        assert kappa is None
    else:
        assert kappa == pytest.approx(1.0)


@given(st.lists(st.lists(labels_strategy, min_size=3, max_size=3), min_size=1, max_size=30))
def test_fleiss_is_at_most_one_and_one_for_unanimous_items(rows):
    items = [i for i, row in enumerate(rows) for _ in row]
    labels = [label for row in rows for label in row]
    kappa = fleiss_kappa(items, labels).kappa
    if kappa is not None:
        assert -0.5 - 1e-9 <= kappa <= 1 + 1e-9  # lower bound -1 / (n - 1) for n = 3 ratings
    unanimous = [row[0] for row in rows for _ in row]
    value = fleiss_kappa(items, unanimous).kappa
    assert value is None if len(set(unanimous)) == 1 else value == pytest.approx(1.0)
