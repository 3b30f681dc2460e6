"""Inter-rater agreement of pairwise judgements: Cohen's weighted kappa over rater pairs and Fleiss' kappa.

Judgements are ordered categories A < tie < B (a tie sits between the two wins). Every function takes flat,
aligned sequences (one entry per judgement): the item judged (in an experiment, the prompt id), the rater and
the outcome ("A" / "tie" / "B", or +1 / 0 / -1). A rater judges an item once: when a rater has several
judgements of the same item, only the first (in input order) takes part; the others are counted as
`duplicates_dropped` (they measure self-consistency, see `rater_quality`). Entries whose rater is None
(automatic ties) are left out. Kappas that are undefined (no expected disagreement, e.g. every judgement the
same category) are None, never NaN.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import sparse

from evaluation.pairwise_results import OUTCOMES, Outcome, encode_outcomes

VERSION = "1"
Weights = Literal["linear", "quadratic"] | None
Weighting = Literal["pairs", "items"]
N_CATEGORIES = len(OUTCOMES)


def weight_matrix(weights: Weights) -> np.ndarray:
    """Disagreement weights between the ordered categories; shape (3, 3), 0 on the diagonal."""
    i, j = np.indices((N_CATEGORIES, N_CATEGORIES))
    distance = np.abs(i - j) / (N_CATEGORIES - 1)
    if weights == "linear":
        return distance
    if weights == "quadratic":
        return distance**2
    if weights is None:
        return (i != j).astype(float)
    raise ValueError(f"weights must be 'linear', 'quadratic' or None, got {weights!r}")


def kappas_from_confusion(confusion: np.ndarray, weights: Weights = "linear") -> np.ndarray:
    """Weighted kappa of each confusion matrix; confusion shape (m, 3, 3) counts -> shape (m,), NaN if undefined.

    kappa = 1 - sum(w * observed) / sum(w * expected), expected = outer(row sums, column sums) / n.
    """
    confusion = np.asarray(confusion, dtype=float)
    w = weight_matrix(weights)
    n = confusion.sum(axis=(1, 2))
    rows = confusion.sum(axis=2)
    cols = confusion.sum(axis=1)
    expected = rows[:, :, None] * cols[:, None, :] / np.where(n > 0, n, 1)[:, None, None]
    observed_disagreement = (confusion * w).sum(axis=(1, 2))
    expected_disagreement = (expected * w).sum(axis=(1, 2))
    defined = expected_disagreement > 1e-12 * np.maximum(n, 1)
    kappa = np.full(len(n), np.nan)
    kappa[defined] = 1 - observed_disagreement[defined] / expected_disagreement[defined]
    return kappa


def _none_if_nan(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def weighted_cohen_kappa(
    x: Sequence[Outcome] | np.ndarray, y: Sequence[Outcome] | np.ndarray, weights: Weights = "linear"
) -> float | None:
    """Cohen's kappa between two raters' judgements of the same items (aligned); None when undefined."""
    a, b = encode_outcomes(x), encode_outcomes(y)
    if len(a) != len(b):
        raise ValueError(f"the two raters judged different numbers of items ({len(a)} and {len(b)})")
    confusion = np.bincount(a.astype(np.int64) * N_CATEGORIES + b, minlength=N_CATEGORIES**2)
    return _none_if_nan(kappas_from_confusion(confusion.reshape(1, N_CATEGORIES, N_CATEGORIES), weights)[0])


def _factorize(values: Sequence[Hashable]) -> tuple[np.ndarray, list[Hashable]]:
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(index)


@dataclass(frozen=True)
class _Judgements:
    """Judgements with one entry per (rater, item): codes for item, rater and outcome; shapes (n,)."""

    item: np.ndarray
    rater: np.ndarray
    label: np.ndarray
    n_items: int
    raters: list[Hashable]
    duplicates_dropped: int


def _prepare(
    items: Sequence[Hashable],
    raters: Sequence[Hashable | None],
    labels: Sequence[Outcome] | np.ndarray,
    keep: np.ndarray | None = None,
) -> _Judgements:
    if not len(items) == len(raters) == len(labels):
        raise ValueError(f"items, raters and labels differ in length ({len(items)}, {len(raters)}, {len(labels)})")
    label = encode_outcomes(labels)
    rated = np.fromiter((r is not None for r in raters), dtype=bool, count=len(raters))
    if keep is not None:
        rated &= keep
    positions = np.flatnonzero(rated)
    item_codes, _ = _factorize([items[i] for i in positions.tolist()])
    rater_codes, rater_names = _factorize([raters[i] for i in positions.tolist()])
    n_items = int(item_codes.max()) + 1 if len(item_codes) else 0
    # np.unique returns the index of the first occurrence, so the first judgement of a rater-item pair wins.
    _, first = np.unique(rater_codes * max(n_items, 1) + item_codes, return_index=True)
    first.sort()
    return _Judgements(
        item=item_codes[first],
        rater=rater_codes[first],
        label=label[positions][first],
        n_items=n_items,
        raters=rater_names,
        duplicates_dropped=len(positions) - len(first),
    )


@dataclass(frozen=True)
class RaterPairKappas:
    """Kappa of every pair of raters who judged at least `min_common` items in common; arrays of shape (m,)."""

    rater_a: list[Hashable]
    rater_b: list[Hashable]
    n_common: np.ndarray
    kappa: np.ndarray
    """NaN where the pair's kappa is undefined."""

    @property
    def defined(self) -> np.ndarray:
        return ~np.isnan(self.kappa)

    def mean(self, weighting: Weighting = "pairs") -> float | None:
        """Plain mean over pairs ("pairs") or mean weighted by items in common ("items"); undefined pairs left out."""
        defined = self.defined
        if not defined.any():
            return None
        if weighting == "pairs":
            return float(self.kappa[defined].mean())
        if weighting == "items":
            return float(np.average(self.kappa[defined], weights=self.n_common[defined]))
        raise ValueError(f"weighting must be 'pairs' or 'items', got {weighting!r}")


def _pair_kappas(judgements: _Judgements, weights: Weights, min_common: int) -> RaterPairKappas:
    n_raters = len(judgements.raters)
    shape = (n_raters, max(judgements.n_items, 1))
    by_label = []
    for code in range(N_CATEGORIES):
        mask = judgements.label == code
        ones = np.ones(int(mask.sum()))
        by_label.append(sparse.csr_matrix((ones, (judgements.rater[mask], judgements.item[mask])), shape=shape))
    rated = by_label[0] + by_label[1] + by_label[2]
    # common[i, j]: items rated by both raters i and j; upper triangle only, each pair once.
    common = sparse.triu(rated @ rated.T, k=1).tocoo()
    keep = common.data >= min_common
    first, second = common.row[keep], common.col[keep]
    confusion = np.empty((len(first), N_CATEGORIES, N_CATEGORIES))
    for a in range(N_CATEGORIES):
        for b in range(N_CATEGORIES):
            counts = (by_label[a] @ by_label[b].T).tocsr()
            confusion[:, a, b] = np.asarray(counts[first, second]).ravel() if len(first) else 0.0
    return RaterPairKappas(
        rater_a=[judgements.raters[i] for i in first],
        rater_b=[judgements.raters[j] for j in second],
        n_common=common.data[keep].astype(np.int64),
        kappa=kappas_from_confusion(confusion, weights),
    )


def rater_pair_kappas(
    items: Sequence[Hashable],
    raters: Sequence[Hashable | None],
    labels: Sequence[Outcome] | np.ndarray,
    *,
    weights: Weights = "linear",
    min_common: int = 2,
) -> RaterPairKappas:
    """Cohen's kappa for each pair of raters over the items both judged (first judgement per rater and item)."""
    if min_common < 1:
        raise ValueError(f"min_common must be at least 1, got {min_common}")
    return _pair_kappas(_prepare(items, raters, labels), weights, min_common)


def pairwise_cohen_kappa(
    items: Sequence[Hashable],
    raters: Sequence[Hashable | None],
    labels: Sequence[Outcome] | np.ndarray,
    *,
    weights: Weights = "linear",
    min_common: int = 2,
    weighting: Weighting = "pairs",
) -> float | None:
    """Cohen's weighted kappa averaged over rater pairs who judged at least `min_common` items in common.

    The default is the plain mean over pairs (each pair counts once, as in ChatEval); weighting="items" weights
    each pair by its items in common. Pairs whose kappa is undefined are left out; None if no pair is defined.
    min_common=2 is the least overlap for which a kappa can exist; noisy small-overlap pairs are averaged in
    rather than hidden. On the real ChatEval judgements (votes.csv) this gives 0.04-0.27 per run (item-weighted
    0.01-0.32); no variant tried (either mean, min_common 2-20, pairs of rating slots) reproduces the paper's
    reported .2-.54 for all runs.
    """
    return rater_pair_kappas(items, raters, labels, weights=weights, min_common=min_common).mean(weighting)


@dataclass(frozen=True)
class FleissKappa:
    """Fleiss' kappa over the items that received exactly `ratings_per_item` ratings."""

    kappa: float | None
    ratings_per_item: int | None
    n_items: int
    items_dropped: int
    """Items with another number of ratings (including single ratings), left out."""


def fleiss_kappa_from_counts(counts: np.ndarray) -> float | None:
    """Fleiss' kappa from an (items, categories) table of counts, every row summing to the same n >= 2."""
    counts = np.asarray(counts, dtype=float)
    if counts.shape[0] == 0:
        return None
    n = counts[0].sum()
    if n < 2 or not np.all(counts.sum(axis=1) == n):
        raise ValueError("every item needs the same number (at least 2) of ratings")
    share = counts.sum(axis=0) / counts.sum()
    observed = ((counts * (counts - 1)).sum(axis=1) / (n * (n - 1))).mean()
    expected = float((share**2).sum())
    if expected >= 1 - 1e-12:
        return None
    return float((observed - expected) / (1 - expected))


def fleiss_kappa(
    items: Sequence[Hashable], labels: Sequence[Outcome] | np.ndarray, *, ratings_per_item: int | None = None
) -> FleissKappa:
    """Fleiss' kappa; each entry is one rating of an item (no rater identity: deduplicate before if needed).

    Fleiss' kappa needs the same number of ratings per item. By default that number is the most common count
    among items with at least two ratings (the larger on a tie); items with another count are dropped.
    """
    if len(items) != len(labels):
        raise ValueError(f"items and labels differ in length ({len(items)} and {len(labels)})")
    item_codes, names = _factorize(items)
    table = np.zeros((len(names), N_CATEGORIES), dtype=np.int64)
    np.add.at(table, (item_codes, encode_outcomes(labels)), 1)
    return _fleiss_from_table(table, ratings_per_item)


def _fleiss_from_table(table: np.ndarray, ratings_per_item: int | None) -> FleissKappa:
    per_item = table.sum(axis=1)
    if ratings_per_item is None:
        sizes, frequency = np.unique(per_item[per_item >= 2], return_counts=True)
        if len(sizes) == 0:
            return FleissKappa(None, None, 0, len(per_item))
        ratings_per_item = int(sizes[frequency == frequency.max()].max())
    elif ratings_per_item < 2:
        raise ValueError(f"ratings_per_item must be at least 2, got {ratings_per_item}")
    keep = per_item == ratings_per_item
    kappa = fleiss_kappa_from_counts(table[keep]) if keep.any() else None
    return FleissKappa(kappa, ratings_per_item, int(keep.sum()), int((~keep).sum()))


@dataclass(frozen=True)
class AgreementFigures:
    """Both kappas over one set of judgements, with what went into them."""

    cohen_kappa: float | None
    fleiss_kappa: float | None
    n_judgements: int
    """Judgements used: one per rater and item."""
    n_raters: int
    n_items: int
    duplicates_dropped: int
    rater_pairs: int
    """Rater pairs with at least `min_common` items in common and a defined kappa (the pairs averaged)."""
    rater_pairs_undefined: int
    fleiss_ratings_per_item: int | None
    fleiss_items: int
    fleiss_items_dropped: int


@dataclass(frozen=True)
class AgreementSummary:
    """Agreement of an experiment with every rating, and without the excluded ones."""

    with_excluded: AgreementFigures
    without_excluded: AgreementFigures
    excluded_judgements: int
    weights: Weights
    min_common: int
    weighting: Weighting

    @property
    def signature(self) -> str:
        return (
            f"agreement|v{VERSION}|categories=A<tie<B|cohen-weights={self.weights}|cohen-min-common={self.min_common}"
            f"|cohen-mean={self.weighting}|rater-item=first|fleiss-ratings-per-item=most-common"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "signature": self.signature}


def _figures(judgements: _Judgements, weights: Weights, min_common: int, weighting: Weighting) -> AgreementFigures:
    pairs = _pair_kappas(judgements, weights, min_common)
    table = np.zeros((judgements.n_items, N_CATEGORIES), dtype=np.int64)
    np.add.at(table, (judgements.item, judgements.label), 1)
    fleiss = _fleiss_from_table(table, None)
    return AgreementFigures(
        cohen_kappa=pairs.mean(weighting),
        fleiss_kappa=fleiss.kappa,
        n_judgements=len(judgements.label),
        n_raters=len(judgements.raters),
        n_items=judgements.n_items,
        duplicates_dropped=judgements.duplicates_dropped,
        rater_pairs=int(pairs.defined.sum()),
        rater_pairs_undefined=int((~pairs.defined).sum()),
        fleiss_ratings_per_item=fleiss.ratings_per_item,
        fleiss_items=fleiss.n_items,
        fleiss_items_dropped=fleiss.items_dropped,
    )


def _excluded_mask(
    raters: Sequence[Hashable | None], excluded: Sequence[bool] | np.ndarray | AbstractSet[Hashable] | None
) -> np.ndarray:
    if excluded is None:
        return np.zeros(len(raters), dtype=bool)
    if isinstance(excluded, AbstractSet):
        return np.fromiter((r in excluded for r in raters), dtype=bool, count=len(raters))
    if isinstance(excluded, np.ndarray):
        is_mask = excluded.dtype == np.bool_
    else:
        is_mask = isinstance(excluded, Sequence) and all(isinstance(x, bool | np.bool_) for x in excluded)
    if not is_mask:
        raise ValueError(
            "excluded must be a per-judgement boolean mask or a set of excluded rater ids, "
            f"got {type(excluded).__name__} that is neither"
        )
    mask = np.asarray(excluded, dtype=bool)
    if mask.shape != (len(raters),):
        raise ValueError(f"excluded has {mask.size} entries for {len(raters)} judgements")
    return mask


def agreement(
    items: Sequence[Hashable],
    raters: Sequence[Hashable | None],
    labels: Sequence[Outcome] | np.ndarray,
    excluded: Sequence[bool] | np.ndarray | AbstractSet[Hashable] | None = None,
    *,
    weights: Weights = "linear",
    min_common: int = 2,
    weighting: Weighting = "pairs",
) -> AgreementSummary:
    """Cohen's weighted kappa (mean over rater pairs) and Fleiss' kappa, with and without excluded judgements.

    `excluded` is a per-judgement boolean mask aligned with `items`, or a set of excluded rater ids.
    Fleiss' kappa uses one judgement per rater and item, over the items with the most common number of raters.
    """
    if min_common < 1:
        raise ValueError(f"min_common must be at least 1, got {min_common}")
    mask = _excluded_mask(raters, excluded)
    everything = _prepare(items, raters, labels)
    included = _prepare(items, raters, labels, keep=~mask)
    rated = np.fromiter((r is not None for r in raters), dtype=bool, count=len(raters))
    return AgreementSummary(
        with_excluded=_figures(everything, weights, min_common, weighting),
        without_excluded=_figures(included, weights, min_common, weighting),
        excluded_judgements=int((mask & rated).sum()),
        weights=weights,
        min_common=min_common,
        weighting=weighting,
    )
