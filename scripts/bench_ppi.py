"""Benchmark: prediction-powered ranking by simulation with known truth, at human fractions 5%, 10% and 30%.

For each judge (the simulation's biased judge, a sharper one, and one that sees only length) and each
fraction, --datasets simulated data sets (6 systems, --prompts prompts, every pair judged on every prompt by the
judge in both orders; humans, 2 votes per item, on the fraction of each pair's prompts) are fitted three ways:

  coverage      share of the 5 non-anchor systems' 95% intervals holding the true ability (human-only target),
                with its binomial standard error over data sets (for one system; the pooled one is at most that)
  rank sets     share of data sets where every system's rank set holds its true rank (simultaneous, >= 95% wanted)
  width ratio   mean human-only width / mean PPI width
  ESS gain      mean over systems and data sets of (human-only width / PPI width)^2: the effective human sample
                size as a multiple of the human votes actually used (the report's effective_human_n / n)

Active sampling (issue 10 item 8): at a 10% budget, human votes drawn item by item with probabilities from
evaluation.ppi.active.sampling_probabilities (boost 1 = uniform; boost b: an item whose judge verdict flipped with
the sides is b times as likely), estimated by the inverse-probability-weighted PPI; coverage, and the ESS ratio
against uniform sampling at the same expected budget (mean squared width uniform / active).

Usage: python scripts/bench_ppi.py [--datasets N] [--prompts K] [--seed S] [--active-datasets M]
(scripts/bench_judges.py runs ppi_section and active_section after its throughput section)
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import numpy as np

from evaluation.errors import InvalidInputError
from evaluation.ppi.active import ipw_estimate, sampling_probabilities, suggest_boost
from evaluation.ppi.estimate import Estimate, human_estimate, judge_estimate, ppi_estimate
from evaluation.ppi.report import rank_sets, wald_intervals
from evaluation.ppi.simulate import Scenario, simulate, truth

FRACTIONS = (0.05, 0.10, 0.30)
JUDGES = {
    "biased judge (skill 1.5, length 1.0, position 0.5, noise 0.5)": Scenario(),
    "sharp judge (skill 3.0, length 0.5, position 0.5, noise 0.2)": Scenario(
        judge_skill=3.0, judge_length=0.5, judge_noise=0.2
    ),
    "length-only judge (skill 0, length 2.0)": Scenario(judge_skill=0.0, judge_length=2.0),
}
LEVEL = 0.95


def _covers(e: Estimate, target: np.ndarray) -> np.ndarray:
    low, high = wald_intervals(e, LEVEL)[1:].T
    return (low <= target[1:]) & (target[1:] <= high)


def run_fraction(scenario: Scenario, n_datasets: int, rng: np.random.Generator) -> dict[str, float]:
    target = truth(scenario)
    true_rank = np.argsort(np.argsort(-target)) + 1
    hits: dict[str, list] = {"ppi": [], "human": [], "judge": []}
    width_h, width_p, ranks, lams, votes, failed = [], [], [], [], [], 0
    for _ in range(n_datasets):
        items = simulate(rng, scenario)
        try:
            ppi, human, judge = ppi_estimate(items, 0), human_estimate(items, 0), judge_estimate(items, 0)
        except InvalidInputError:  # no finite human-only optimum (a system won every human vote): counted
            failed += 1
            continue
        for name, e in (("ppi", ppi), ("human", human), ("judge", judge)):
            hits[name].append(_covers(e, target))
        width_h.append(human.se[1:])
        width_p.append(ppi.se[1:])
        sets = rank_sets(ppi, LEVEL)
        ranks.append(np.all((sets[:, 0] <= true_rank) & (true_rank <= sets[:, 1])))
        lams.append(ppi.lam)
        votes.append(items.n_human_votes)
    wh, wp = np.asarray(width_h), np.asarray(width_p)
    done = len(lams)
    return {
        "datasets": done,
        "failed": failed,
        "votes": float(np.mean(votes)),
        "ppi": float(np.mean(hits["ppi"])),
        "human": float(np.mean(hits["human"])),
        "judge": float(np.mean(hits["judge"])),
        "se": math.sqrt(LEVEL * (1 - LEVEL) / max(done, 1)),
        "ranks": float(np.mean(ranks)),
        "lam": float(np.mean(lams)),
        "width_ratio": float(wh.mean() / wp.mean()),
        "gain": float(np.mean((wh / wp) ** 2)),
    }


def ppi_section(n_datasets: int = 2000, n_prompts: int = 100, seed: int = 0) -> None:
    print(
        f"\n## PPI simulation: {n_datasets} data sets per row, 6 systems, {n_prompts} prompts, 15 pairs, "
        f"{LEVEL:.0%} intervals"
    )
    for label, base in JUDGES.items():
        print(f"\n{label}")
        print(
            "| human fraction | human votes | PPI coverage | human-only | judge-only | rank sets | lambda "
            "| width ratio | ESS gain | failed |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for fraction in FRACTIONS:
            rng = np.random.default_rng([seed, round(fraction * 1000)])
            scenario = Scenario(**{**base.__dict__, "human_fraction": fraction, "n_prompts": n_prompts})
            started = time.perf_counter()
            r = run_fraction(scenario, n_datasets, rng)
            print(
                f"| {fraction:.0%} | {r['votes']:.0f} | {r['ppi']:.3f} +- {r['se']:.3f} | {r['human']:.3f} "
                f"| {r['judge']:.3f} | {r['ranks']:.3f} | {r['lam']:.2f} | {r['width_ratio']:.3f} "
                f"| {r['gain']:.2f}x | {r['failed']} |  ({time.perf_counter() - started:.0f} s)"
            )


ACTIVE = {
    "biased judge, 2 human votes per item": Scenario(human_fraction=1.0, n_prompts=60),
    "judge guessing on 40% of items, 5 votes": Scenario(
        human_fraction=1.0, n_prompts=60, judge_guess=0.4, human_votes=5
    ),
}
BOOSTS = (1.0, 3.0, 0.5)


def active_section(n_datasets: int = 1000, seed: int = 0) -> None:
    print(f"\n## Active sampling: {n_datasets} data sets per row, 10% budget, inverse-probability-weighted PPI")
    print("| scenario | boost | coverage | mean width | ESS vs uniform | suggested boost (full data) |")
    print("|---|---|---|---|---|---|")
    for label, scenario in ACTIVE.items():
        target, widths = truth(scenario), {}
        for boost in BOOSTS:
            rng = np.random.default_rng([seed, round(boost * 10)])
            hits, width, suggested = [], [], []
            for _ in range(n_datasets):
                full = simulate(rng, scenario)
                pi = sampling_probabilities(full, 0.1 * len(full.pair), boost=boost)
                xi = rng.random(len(pi)) < pi
                drawn = replace(
                    full, human=np.where(xi, full.human, np.nan), human_votes=np.where(xi, full.human_votes, 0)
                )
                e = ipw_estimate(drawn, pi, 0)
                hits.append(_covers(e, target))
                width.append(2 * 1.96 * e.se[1:])
                suggested.append(suggest_boost(full))
            widths[boost] = np.asarray(width)
            ratio = float(np.mean(widths[1.0] ** 2) / np.mean(widths[boost] ** 2))
            print(
                f"| {label} | {boost:g} | {np.mean(hits):.3f} | {np.mean(width):.4f} | {ratio:.3f} "
                f"| {np.mean(suggested):.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--active-datasets", type=int, default=1000)
    args = parser.parse_args()
    if not 1 <= args.datasets <= 100_000 or not 10 <= args.prompts <= 10_000:
        parser.error("--datasets 1..100,000, --prompts 10..10,000")
    ppi_section(args.datasets, args.prompts, args.seed)
    if args.active_datasets > 0:
        active_section(args.active_datasets, args.seed)


if __name__ == "__main__":
    main()
