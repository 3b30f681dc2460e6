"""Agreement between raters on labels of any kind: Krippendorff's alpha at the level the labels have, raw percent
agreement, and seeded bootstrap intervals over items.

Every function takes flat, aligned sequences, one entry per answer: the item answered (an annotated turn and
question), the rater, and the value. A rater answers an item once: when a rater has several answers to the same
item, only the first (in input order) takes part, as in `evaluation.agreement`. Items with fewer than two answers
cannot be compared and are left out ("pairable" items). Figures that are undefined (no pairable item, or no expected
disagreement because every value is the same) are None, never NaN.

Levels and the difference function (delta squared) between two values c and k:
- "nominal": 0 if equal else 1 (binary questions, multiple choice).
- "ordinal": (sum of the counts of the categories from c to k) - (n_c + n_k) / 2, squared (Likert scales; the
  categories' order is given by `categories`; Krippendorff 2011).
- "interval": (c - k) squared (numeric values).
- "set": 1 - |c & k| / |c | k| (Jaccard distance; multi-select answers given as sets; equals nominal on singletons;
  two empty sets agree).

alpha = 1 - D_o / D_e from the coincidence matrix: D_o = sum o_ck delta_ck / n, D_e = sum n_c n_k delta_ck /
(n (n - 1)). Percent agreement is, per pairable item, the share of pairs of its answers that are equal, averaged over
items. Intervals are percentiles of both figures over items resampled with replacement (seed recorded). On
labels simulated with known alpha (scripts/bench_label_agreement.py, 1,000 data sets per setting, every level),
alpha's bias was within 0.002 and its 95% interval covered 0.938-0.956 with 60 or 150 items, 0.930 with 30 items
rated twice (a little short of 0.95: percentile intervals under-cover on few items).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

VERSION = "1"
Level = Literal["nominal", "ordinal", "interval", "set"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "set")
BOOTSTRAP_BATCH = 100  # resamples computed at once (memory: batch x items, and batch x values squared)


@dataclass(frozen=True)
class _Table:
    """Pairable answers as an (items, distinct values) count table, with the values in code order."""

    counts: np.ndarray  # (n_items, n_values) int
    values: list[Any]
    n_raters: int
    duplicates_dropped: int


def _first_answers(
    items: Sequence[Hashable], raters: Sequence[Hashable], values: Sequence[Any]
) -> tuple[list[Hashable], list[Any], set[Hashable], int]:
    if not len(items) == len(raters) == len(values):
        raise ValueError(f"items, raters and values differ in length ({len(items)}, {len(raters)}, {len(values)})")
    seen: set[tuple[Hashable, Hashable]] = set()
    kept_items: list[Hashable] = []
    kept_values: list[Any] = []
    raters_seen: set[Hashable] = set()
    for item, rater, value in zip(items, raters, values, strict=True):
        if value is None or (item, rater) in seen:
            continue
        seen.add((item, rater))
        kept_items.append(item)
        kept_values.append(value)
        raters_seen.add(rater)
    return kept_items, kept_values, raters_seen, len(items) - len(kept_items) - sum(v is None for v in values)


def _value_order(values: list[Any], level: Level, categories: Sequence[Any] | None) -> list[Any]:
    distinct = list(dict.fromkeys(values))
    if level == "ordinal":
        if categories is None:
            raise ValueError("ordinal agreement needs the categories in their order")
        unknown = [v for v in distinct if v not in categories]
        if unknown:
            raise ValueError(f"values not among the categories: {unknown[:5]!r}")
        return list(categories)
    if level == "interval":
        return sorted(float(v) for v in distinct)
    if categories is not None:
        return list(dict.fromkeys([*categories, *distinct]))
    return distinct


def _table(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    values: Sequence[Any],
    level: Level,
    categories: Sequence[Any] | None,
) -> _Table:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    kept_items, kept_values, raters_seen, dropped = _first_answers(items, raters, values)
    if level == "set":
        kept_values = [frozenset(v) for v in kept_values]
    elif level == "interval":
        kept_values = [float(v) for v in kept_values]
    order = _value_order(kept_values, level, categories)
    code = {value: i for i, value in enumerate(order)}
    item_code: dict[Hashable, int] = {}
    rows = np.fromiter((item_code.setdefault(i, len(item_code)) for i in kept_items), dtype=np.int64)
    counts = np.zeros((len(item_code), len(order)), dtype=np.int64)
    if len(rows):
        np.add.at(counts, (rows, np.fromiter((code[v] for v in kept_values), dtype=np.int64)), 1)
    pairable = counts.sum(axis=1) >= 2
    return _Table(counts[pairable], order, len(raters_seen), dropped)


def _delta(values: list[Any], level: Level, marginals: np.ndarray) -> np.ndarray:
    """Difference function, shape (..., n_values, n_values); ordinal depends on the marginals (counts of pairable
    values, shape (..., n_values)), the other levels on the values alone."""
    size = len(values)
    if level == "nominal":
        return 1.0 - np.eye(size)
    if level == "interval":
        points = np.asarray(values, dtype=float)
        return (points[:, None] - points[None, :]) ** 2
    if level == "set":
        delta = np.zeros((size, size))
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                union = len(a | b)
                delta[i, j] = 1.0 - len(a & b) / union if union else 0.0
        return delta
    zero = np.zeros((*marginals.shape[:-1], 1))
    cumulative = np.concatenate([zero, np.cumsum(marginals, axis=-1, dtype=float)], axis=-1)
    positions = np.arange(size)
    low, high = np.minimum.outer(positions, positions), np.maximum.outer(positions, positions)
    between = cumulative[..., high + 1] - cumulative[..., low]
    return (between - (marginals[..., :, None] + marginals[..., None, :]) / 2.0) ** 2


def _figures(counts: np.ndarray, weights: np.ndarray, values: list[Any], level: Level) -> tuple[np.ndarray, ...]:
    """Alpha and percent agreement for each row of `weights` (how often each item is drawn; shape (draws, items)):
    two arrays of shape (draws,), NaN where undefined."""
    per_item = counts.sum(axis=1)
    agreeing = (counts * (counts - 1)).sum(axis=1) / (per_item * (per_item - 1))
    total = weights.sum(axis=1)
    percent = np.where(total > 0, weights @ agreeing / np.where(total > 0, total, 1), np.nan)
    marginals = weights @ counts  # an item's coincidences add up to its counts: (draws, values)
    n = marginals.sum(axis=1)
    if level == "ordinal":
        delta = _delta(values, level, marginals)  # (draws, values, values)
        scaled = weights / (per_item - 1)
        pairs = (counts[:, :, None] * counts[:, None, :]).reshape(len(counts), -1)  # (items, values squared)
        coincidence = (scaled @ pairs).reshape(delta.shape)
        observed = (coincidence * delta).sum(axis=(1, 2))  # the diagonal of delta is 0: no correction needed
        expected = np.einsum("dc,dck,dk->d", marginals, delta, marginals)
    else:
        delta = _delta(values, level, marginals)
        observed = weights @ (np.einsum("uc,ck,uk->u", counts, delta, counts) / (per_item - 1))
        expected = np.einsum("dc,ck,dk->d", marginals, delta, marginals)
    defined = (n >= 2) & (expected > 1e-12 * n * n)
    alpha = np.full(len(weights), np.nan)
    alpha[defined] = 1.0 - (n[defined] - 1) * observed[defined] / expected[defined]
    return alpha, percent


def _point(table: _Table, level: Level) -> tuple[float | None, float | None]:
    if not len(table.counts):
        return None, None
    alpha, percent = _figures(table.counts, np.ones((1, len(table.counts))), table.values, level)
    return (None if np.isnan(alpha[0]) else float(alpha[0])), float(percent[0])


def krippendorff_alpha(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    values: Sequence[Any],
    *,
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
) -> float | None:
    """Krippendorff's alpha over the pairable items; None when undefined."""
    return _point(_table(items, raters, values, level, categories), level)[0]


def percent_agreement(items: Sequence[Hashable], raters: Sequence[Hashable], values: Sequence[Any]) -> float | None:
    """Mean over pairable items of the share of equal pairs of answers (exact equality; lists compare as sets)."""
    normalised = [frozenset(v) if isinstance(v, list | set | tuple) else v for v in values]
    return _point(_table(items, raters, normalised, "nominal", None), "nominal")[1]


@dataclass(frozen=True)
class LabelAgreement:
    """Alpha and percent agreement of one question, with percentile bootstrap intervals over items."""

    level: Level
    alpha: float | None
    alpha_interval: tuple[float, float] | None
    percent: float | None
    percent_interval: tuple[float, float] | None
    n_items: int
    """Pairable items: answered by at least two raters."""
    n_answers: int
    """Answers on pairable items (one per rater and item)."""
    n_raters: int
    duplicates_dropped: int
    n_bootstrap: int
    bootstrap_undefined: int
    """Resamples whose alpha was undefined (left out of its interval)."""
    seed: int
    confidence: float

    @property
    def signature(self) -> str:
        return (
            f"label-agreement|v{VERSION}|alpha=krippendorff|level={self.level}|rater-item=first"
            f"|percent=pairs-per-item-mean|interval=percentile|resample=items|n-bootstrap={self.n_bootstrap}"
            f"|seed={self.seed}|confidence={self.confidence}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "signature": self.signature}


def _percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float] | None:
    if len(draws) < 2:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(draws, [tail, 100.0 - tail])
    return float(low), float(high)


def label_agreement(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    values: Sequence[Any],
    *,
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> LabelAgreement:
    """Both figures with intervals; intervals need at least two pairable items (else None)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be at least 0, got {n_bootstrap}")
    table = _table(items, raters, values, level, categories)
    n_items = len(table.counts)
    alpha, percent = _point(table, level)
    alphas, percents = np.empty(0), np.empty(0)
    if n_items >= 2 and n_bootstrap:
        rng = np.random.default_rng(seed)
        for start in range(0, n_bootstrap, BOOTSTRAP_BATCH):
            size = min(BOOTSTRAP_BATCH, n_bootstrap - start)
            drawn = rng.integers(0, n_items, (size, n_items)) + n_items * np.arange(size)[:, None]
            weights = np.bincount(drawn.ravel(), minlength=size * n_items).reshape(size, n_items).astype(float)
            draw_alpha, draw_percent = _figures(table.counts, weights, table.values, level)
            alphas = np.concatenate([alphas, draw_alpha[~np.isnan(draw_alpha)]])
            percents = np.concatenate([percents, draw_percent])
    return LabelAgreement(
        level=level,
        alpha=alpha,
        alpha_interval=_percentile_interval(alphas, confidence) if alpha is not None else None,
        percent=percent,
        percent_interval=_percentile_interval(percents, confidence) if percent is not None else None,
        n_items=n_items,
        n_answers=int(table.counts.sum()),
        n_raters=table.n_raters,
        duplicates_dropped=table.duplicates_dropped,
        n_bootstrap=n_bootstrap if n_items >= 2 else 0,
        bootstrap_undefined=(n_bootstrap - len(alphas)) if n_items >= 2 else 0,
        seed=seed,
        confidence=confidence,
    )
