"""Bias and interval coverage of the study dashboard's agreement figures on labels simulated with known truth.

    python scripts/bench_label_agreement.py                 # 4 levels x 3 settings, 1,000 data sets each
    python scripts/bench_label_agreement.py --sets 200 --bootstrap 500

Each item has a true label drawn uniformly from k categories; each of its raters copies it with probability p and
otherwise draws a label uniformly at random. Two answers then agree exactly when both copied, or by chance, and for
any difference function the expected disagreement of two answers is (1 - p^2) times that of two independent uniform
draws, which is also the expected disagreement: Krippendorff's alpha is p^2 at every level (nominal, ordinal,
interval; "set" uses singletons, equal to nominal). The script prints, per level and setting, the mean estimate
against p^2 and how often the 95% percentile bootstrap interval over items (evaluation.label_agreement) covered it,
with the binomial band a correct 95% interval would fall in.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evaluation.label_agreement import label_agreement  # noqa: E402

SETTINGS = (  # (items, raters per item, raters, categories, p)
    (30, 2, 6, 2, 0.7),
    (60, 3, 10, 5, 0.5),
    (150, 3, 20, 5, 0.85),
)


def simulate(rng: np.random.Generator, items: int, per_item: int, raters: int, k: int, p: float):
    truth = rng.integers(1, k + 1, items)
    item_ids, rater_ids, values = [], [], []
    for item in range(items):
        for rater in rng.choice(raters, per_item, replace=False):
            item_ids.append(item)
            rater_ids.append(int(rater))
            values.append(int(truth[item]) if rng.random() < p else int(rng.integers(1, k + 1)))
    return item_ids, rater_ids, values


def run(level: str, setting: tuple, sets: int, bootstrap: int, seed: int) -> tuple[float, float, float]:
    items, per_item, raters, k, p = setting
    rng = np.random.default_rng(seed)
    estimates, covered = [], 0
    for replicate in range(sets):
        item_ids, rater_ids, values = simulate(rng, items, per_item, raters, k, p)
        if level == "set":
            values = [[str(v)] for v in values]
        result = label_agreement(
            item_ids,
            rater_ids,
            values,
            level=level,  # type: ignore[arg-type]
            categories=list(range(1, k + 1)) if level == "ordinal" else None,
            n_bootstrap=bootstrap,
            seed=replicate,
        )
        if result.alpha is None or result.alpha_interval is None:
            continue
        estimates.append(result.alpha)
        covered += result.alpha_interval[0] <= p * p <= result.alpha_interval[1]
    return float(np.mean(estimates)), covered / max(1, len(estimates)), len(estimates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=1000, help="simulated data sets per level and setting")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples per data set")
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()
    band = 1.96 * np.sqrt(0.95 * 0.05 / args.sets)
    print(
        f"{args.sets} data sets each, {args.bootstrap} resamples; a correct 95% interval covers "
        f"{0.95 - band:.3f}-{0.95 + band:.3f} of the time"
    )
    columns = ("items", 5), ("per", 3), ("k", 2), ("p", 5), ("truth", 6), ("mean", 7), ("bias", 7), ("cover", 6)
    print(f"{'level':9} " + " ".join(f"{name:>{width}}" for name, width in columns) + f" {'s':>6}")
    for level in ("nominal", "ordinal", "interval", "set"):
        for setting in SETTINGS:
            started = time.perf_counter()
            mean, coverage, used = run(level, setting, args.sets, args.bootstrap, args.seed)
            items, per_item, _, k, p = setting
            print(
                f"{level:9} {items:5d} {per_item:3d} {k:2d} {p:5.2f} {p * p:6.3f} {mean:7.3f} {mean - p * p:+7.3f} "
                f"{coverage:6.3f} {time.perf_counter() - started:6.1f}"
                + ("" if used == args.sets else f"  ({args.sets - used} undefined)")
            )


if __name__ == "__main__":
    main()
