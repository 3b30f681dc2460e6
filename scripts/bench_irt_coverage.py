"""Coverage of the IRT bootstrap intervals on judgements simulated with known truth (no noisy raters).

    python scripts/bench_irt_coverage.py                    # 4 shapes x 50 data sets, 100 replicates each
    python scripts/bench_irt_coverage.py --sets 100 --jobs 4

For every simulated data set the fit is bootstrapped once (the hub's resampling: prompts, then judgements within
them) and both interval methods are read off the same draws: "before" the percentile interval, "after" the
bias-corrected normal interval the hub now publishes (`evaluation.irt.bootstrap.INTERVAL`). An ability interval
(relative to the anchor) covers when it holds the true ability minus the true anchor's; a pairwise interval when it
holds the true difference. Pairs within one data set are not independent: the data set is the unit of sampling, so
the binomial band printed uses the number of data sets times the mean number of intervals per set only as a rough
guide. Shapes vary the numbers of systems, prompts, raters and judgements, and the spread of true abilities
(sd 1: strong differences; sd 0.3: weak ones).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
for folder in (REPO, REPO / "scripts"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from simulate_ratings import aligned, simulate  # noqa: E402

from evaluation.irt.bootstrap import INTERVAL, bootstrap_fit, bootstrap_interval  # noqa: E402
from evaluation.irt.model import fit_pairwise_irt  # noqa: E402

BEFORE, AFTER = "percentile", INTERVAL


@dataclass(frozen=True)
class Shape:
    name: str
    judgements: int
    systems: int
    prompts: int
    raters: int
    sd_ability: float = 1.0


SHAPES = (
    Shape("4 systems, 30 prompts, 1k judgements, strong", 1_000, 4, 30, 20),
    Shape("5 systems, 50 prompts, 3k judgements, strong", 3_000, 5, 50, 30),
    Shape("8 systems, 100 prompts, 5k judgements, weak", 5_000, 8, 100, 50, 0.3),
    Shape("10 systems, 200 prompts, 10k judgements, strong", 10_000, 10, 200, 100),
)


@dataclass
class Tally:
    """Intervals that covered, intervals, and the sum of their widths, per (kind, method)."""

    covered: dict[tuple[str, str], int]
    total: dict[tuple[str, str], int]
    width: dict[tuple[str, str], float]

    @classmethod
    def empty(cls) -> Tally:
        return cls({}, {}, {})

    def add(self, kind: str, method: str, low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> None:
        key = (kind, method)
        self.covered[key] = self.covered.get(key, 0) + int(((low <= truth) & (truth <= high)).sum())
        self.total[key] = self.total.get(key, 0) + len(truth)
        self.width[key] = self.width.get(key, 0.0) + float((high - low).sum())

    def merge(self, other: Tally) -> None:
        for key in other.total:
            self.covered[key] = self.covered.get(key, 0) + other.covered[key]
            self.total[key] = self.total.get(key, 0) + other.total[key]
            self.width[key] = self.width.get(key, 0.0) + other.width[key]

    def coverage(self, kind: str, method: str) -> float:
        return self.covered[kind, method] / self.total[kind, method]

    def mean_width(self, kind: str, method: str) -> float:
        return self.width[kind, method] / self.total[kind, method]


def one_data_set(shape: Shape, seed: int, replicates: int, level: float = 0.95) -> Tally:
    """Simulate, fit, bootstrap once; tally both interval methods for abilities and pairwise differences."""
    judgements, truth = simulate(
        shape.judgements, shape.systems, shape.prompts, n_raters=shape.raters, sd_ability=shape.sd_ability, seed=seed
    )
    fit = fit_pairwise_irt(judgements)
    boot = bootstrap_fit(fit, n_bootstrap=replicates, seed=seed)
    true = aligned(truth.abilities, judgements.systems, fit.systems)
    anchor = fit.systems.index(fit.anchor)
    rows, cols = np.triu_indices(len(fit.systems), k=1)
    cases = {
        "abilities": (
            np.delete(fit.abilities, anchor),
            np.delete(boot.abilities, anchor, axis=1),
            np.delete(true - true[anchor], anchor),
        ),
        "pairs": (
            fit.abilities[rows] - fit.abilities[cols],
            boot.abilities[:, rows] - boot.abilities[:, cols],
            true[rows] - true[cols],
        ),
    }
    tally = Tally.empty()
    for kind, (estimate, draws, truth_values) in cases.items():
        for method in (BEFORE, AFTER):
            low, high = bootstrap_interval(estimate, draws, level, method).T
            tally.add(kind, method, low, high, truth_values)
    return tally


def measure(shape: Shape, sets: int, replicates: int, *, first_seed: int = 0, jobs: int = 1) -> Tally:
    seeds = range(first_seed, first_seed + sets)
    tally = Tally.empty()
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for part in pool.map(one_data_set, [shape] * sets, seeds, [replicates] * sets):
                tally.merge(part)
    else:
        for seed in seeds:
            tally.merge(one_data_set(shape, seed, replicates))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=50, help="simulated data sets per shape")
    parser.add_argument("--replicates", type=int, default=100, help="bootstrap replicates per data set")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--seed", type=int, default=1000, help="seed of the first data set of every shape")
    args = parser.parse_args(argv)
    print(f"95% intervals; before = {BEFORE}, after = {AFTER}")
    print(f"{args.sets} data sets per shape, {args.replicates} bootstrap replicates each")
    header = (
        f"{'shape':50s} {'abilities before':>16s} {'after':>6s} {'pairs before':>13s} {'after':>6s} "
        f"{'width before':>12s} {'after':>6s} {'change':>7s} {'seconds':>8s}"
    )
    print(header)
    overall = Tally.empty()
    for shape in SHAPES:
        started = time.perf_counter()
        tally = measure(shape, args.sets, args.replicates, first_seed=args.seed, jobs=args.jobs)
        overall.merge(tally)
        seconds = time.perf_counter() - started
        print(_row(shape.name, tally, seconds))
    print(_row(f"all {args.sets * len(SHAPES)} data sets", overall, None))
    return 0


def _row(name: str, tally: Tally, seconds: float | None) -> str:
    before, after = tally.mean_width("pairs", BEFORE), tally.mean_width("pairs", AFTER)
    return (
        f"{name:50s} {tally.coverage('abilities', BEFORE):16.3f} {tally.coverage('abilities', AFTER):6.3f} "
        f"{tally.coverage('pairs', BEFORE):13.3f} {tally.coverage('pairs', AFTER):6.3f} "
        f"{before:12.3f} {after:6.3f} {after / before - 1:+7.1%} {'' if seconds is None else f'{seconds:8.0f}'}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
