"""Replay the real ChatEval judgements in random vs adaptive order: how many are needed for the same answers?

Each run (experiment: two systems on one evaluation set) releases its prompts in rounds of `batch` prompts; a
released prompt brings all of that run's judgements on it (usually 3 workers), and the whole round is paid for.

- random: a run's prompts come in a random order.
- adaptive: the first round is random; afterwards the pairwise IRT model is refitted on everything released so
  far (all runs: prompt discriminations are shared) and each run takes the unreleased prompts with the most
  expected information about its own comparison at the current gap (evaluation.irt.information). Prompts no
  run has released yet count with discrimination 1 (the prior's median).

(a) Decisions: every run feeds its released judgements, in order, to the anytime-valid sequential test
    (evaluation.irt.sequential, alpha 5%) and stops releasing once it decides or runs out of prompts. The reference
    decision of a run is that same test's e-value on the run's full data (it depends only on the win and loss
    counts, so it is order-free): a run decided at the full data is decided by any order at the latest when its
    data is exhausted; a run undecided at the full data has to spend all of it. Reported: judgements released
    until every run has stopped, and how many runs end with the reference decision. The exact binomial test at
    the end (scipy.stats.binomtest) is listed alongside for transparency.
(b) Ranking: runs release rounds without stopping; after every round the model is refitted and its system
    ranking compared with the full-data fit. Reported: judgements released when Spearman first reaches 0.95.

    python scripts/replay_adaptive.py [--votes ../shared/data/chateval/votes.csv] [--seeds 10] [--batch 10]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import binomtest, spearmanr

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evaluation.irt.information import expected_information  # noqa: E402
from evaluation.irt.model import IrtFit, fit_pairwise_irt  # noqa: E402
from evaluation.irt.sequential import SequentialTest, decision_boundary  # noqa: E402
from evaluation.judgements import Judgements  # noqa: E402
from evaluation.ratings_files import read_chateval_votes  # noqa: E402

DEFAULT_VOTES = REPO.parent / "shared" / "data" / "chateval" / "votes.csv"
SPEARMAN_TARGET = 0.95
ORDERS = ("random", "adaptive")


@dataclass(frozen=True)
class Run:
    """One experiment: its pair of systems, its prompts and, per prompt, its judgement rows in file order."""

    name: str
    system_a: int
    system_b: int
    prompts: np.ndarray  # (m,) prompt indices
    rows: tuple[np.ndarray, ...]  # rows[i]: judgement indices on prompts[i]

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.rows)


@dataclass
class ReplayResult:
    order: str
    seed: int
    released: int  # judgements released until every run stopped (a) or until the ranking target (b)
    decisions: dict[str, str | None] = field(default_factory=dict)
    spent: dict[str, int] = field(default_factory=dict)  # judgements released per run
    spearman_curve: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Summary:
    """Per order, the (a) and (b) figures of every seed, plus the reference decisions."""

    total: int
    sizes: dict[str, int]  # judgements per run
    reference: dict[str, str | None]
    binomial: dict[str, str | None]
    decisions: dict[str, list[ReplayResult]]
    ranking: dict[str, list[ReplayResult]]

    def agreement(self, order: str) -> list[int]:
        """Per seed, the runs whose replayed decision equals the reference decision."""
        return [sum(r.decisions[k] == v for k, v in self.reference.items()) for r in self.decisions[order]]

    def spent_on_decided(self, order: str) -> list[int]:
        """Per seed, judgements released by the runs the reference decides (the only ones order can save on)."""
        decided = [k for k, v in self.reference.items() if v is not None]
        return [sum(r.spent[k] for k in decided) for r in self.decisions[order]]


def split_runs(j: Judgements) -> list[Run]:
    """The experiments of j, each with its prompts and per-prompt judgement rows (file order kept)."""
    runs = []
    for e, name in enumerate(j.experiments):
        rows = np.flatnonzero(j.experiment == e)
        if len(rows) == 0:
            continue
        prompts, inverse = np.unique(j.prompt[rows], return_inverse=True)
        per_prompt = tuple(rows[inverse == i] for i in range(len(prompts)))
        runs.append(Run(name, int(j.system_a[rows[0]]), int(j.system_b[rows[0]]), prompts, per_prompt))
    return runs


def reference_decisions(j: Judgements, runs: list[Run], *, alpha: float, prior: float) -> dict[str, str | None]:
    """The sequential test's decision from each run's full win/loss counts (order-free)."""
    out: dict[str, str | None] = {}
    for run in runs:
        outcome = j.outcome[np.concatenate(run.rows)]
        wins, losses = int(np.sum(outcome == 1)), int(np.sum(outcome == -1))
        boundary = decision_boundary(wins + losses, alpha=alpha, prior=prior)[wins + losses]
        out[run.name] = "A" if wins >= boundary else "B" if losses >= boundary else None
    return out


def binomial_decisions(j: Judgements, runs: list[Run], *, alpha: float) -> dict[str, str | None]:
    """Exact two-sided binomial test of wins vs losses (ties dropped) on each run's full data."""
    out: dict[str, str | None] = {}
    for run in runs:
        outcome = j.outcome[np.concatenate(run.rows)]
        wins, losses = int(np.sum(outcome == 1)), int(np.sum(outcome == -1))
        significant = wins + losses > 0 and binomtest(wins, wins + losses).pvalue < alpha
        out[run.name] = None if not significant else ("A" if wins > losses else "B")
    return out


def _discrimination_lookup(j: Judgements, fit: IrtFit | None) -> np.ndarray:
    """(n_prompts of j,) the fit's discriminations, 1 for prompts the fit has not seen."""
    values = np.ones(len(j.prompts))
    if fit is not None:
        index = {label: k for k, label in enumerate(j.prompts)}
        values[[index[p] for p in fit.prompts]] = fit.discrimination
    return values


def _gap(j: Judgements, fit: IrtFit | None, run: Run) -> float:
    if fit is None:
        return 0.0
    ability = dict(zip(fit.systems, fit.abilities, strict=True))
    return float(ability.get(j.systems[run.system_a], 0.0) - ability.get(j.systems[run.system_b], 0.0))


def _next_prompts(j: Judgements, run: Run, left: np.ndarray, fit: IrtFit | None, batch: int, rng_order) -> np.ndarray:
    """Positions (into run.prompts) to release next: random order, or most information first."""
    if fit is None:
        return rng_order[np.isin(rng_order, left)][:batch]
    info = expected_information(_discrimination_lookup(j, fit)[run.prompts[left]], _gap(j, fit, run), fit.tau)
    return left[np.lexsort((left, -info))][:batch]


def _ranking_spearman(fit: IrtFit, full: IrtFit) -> float:
    ability = dict(zip(fit.systems, fit.abilities, strict=True))
    shared = [k for k, name in enumerate(full.systems) if name in ability]
    partial = [ability[full.systems[k]] for k in shared]
    return float(spearmanr(partial, full.abilities[shared])[0])


def replay(
    j: Judgements,
    runs: list[Run],
    *,
    order: str,
    seed: int,
    batch: int = 10,
    alpha: float = 0.05,
    prior: float = 1.0,
    stop: bool = True,
    full_fit: IrtFit | None = None,
) -> ReplayResult:
    """One replay. stop=True: (a), runs stop when decided. stop=False with full_fit: (b), the ranking curve."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    rng = np.random.default_rng(seed)
    permutations = [rng.permutation(len(run.prompts)) for run in runs]
    unreleased = [np.ones(len(run.prompts), dtype=bool) for run in runs]
    tests = [SequentialTest(alpha=alpha, prior=prior) for _ in runs]
    released = np.zeros(len(j), dtype=bool)
    result = ReplayResult(order, seed, 0)
    fit: IrtFit | None = None
    first_round = True
    while True:
        active = [i for i, run in enumerate(runs) if unreleased[i].any() and not (stop and tests[i].done)]
        if not active:
            break
        for i in active:
            run, left = runs[i], np.flatnonzero(unreleased[i])
            use_fit = fit if order == "adaptive" and not first_round else None
            chosen = _next_prompts(j, run, left, use_fit, batch, permutations[i])
            unreleased[i][chosen] = False
            rows = np.concatenate([run.rows[k] for k in chosen])
            released[rows] = True
            tests[i].update(j.outcome[rows])
        first_round = False
        if order == "adaptive" or full_fit is not None:
            fit = fit_pairwise_irt(j.subset(released))
        if full_fit is not None and fit is not None:
            rho = _ranking_spearman(fit, full_fit)
            result.spearman_curve.append((int(released.sum()), rho))
            if not stop and rho >= SPEARMAN_TARGET:
                break
    result.released = int(released.sum())
    result.decisions = {run.name: test.decision for run, test in zip(runs, tests, strict=True)}
    result.spent = {run.name: int(released[np.concatenate(run.rows)].sum()) for run in runs}
    return result


def judgements_to_target(result: ReplayResult, total: int) -> int:
    """Judgements released when the ranking first reached the target (all of them if it never did)."""
    return next((n for n, rho in result.spearman_curve if rho >= SPEARMAN_TARGET), total)


def replay_summary(
    votes: str | Path = DEFAULT_VOTES,
    *,
    seeds: int = 10,
    batch: int = 10,
    alpha: float = 0.05,
    prior: float = 1.0,
    ranking: bool = True,
) -> Summary:
    """Both orders over `seeds` seeds: (a) decisions with stopping, (b) judgements to the ranking target."""
    votes = Path(votes)
    runs_csv = votes.with_name("runs.csv")
    j = read_chateval_votes(votes, runs_csv if runs_csv.is_file() else None)
    runs = split_runs(j)
    full_fit = fit_pairwise_irt(j)
    summary = Summary(
        total=len(j),
        sizes={run.name: run.size for run in runs},
        reference=reference_decisions(j, runs, alpha=alpha, prior=prior),
        binomial=binomial_decisions(j, runs, alpha=alpha),
        decisions={order: [] for order in ORDERS},
        ranking={order: [] for order in ORDERS},
    )
    for seed in range(seeds):
        for order in ORDERS:
            for stop in (True, False) if ranking else (True,):
                result = replay(
                    j,
                    runs,
                    order=order,
                    seed=seed,
                    batch=batch,
                    alpha=alpha,
                    prior=prior,
                    stop=stop,
                    full_fit=None if stop else full_fit,
                )
                (summary.decisions if stop else summary.ranking)[order].append(result)
    return summary


def _mean_sd(values: list[int] | list[float]) -> str:
    x = np.asarray(values, dtype=float)
    return f"{x.mean():,.0f} +- {x.std(ddof=1) if len(x) > 1 else 0.0:,.0f}"


def format_table(summary: Summary) -> str:
    """The replay figures as a plain-text table (mean +- standard deviation over seeds)."""
    n_runs = len(summary.reference)
    decided = [k for k, v in summary.reference.items() if v is not None]
    size = sum(summary.sizes[k] for k in decided)
    binomial = sum(v is not None for v in summary.binomial.values())
    seeds = len(summary.decisions[ORDERS[0]])
    lines = [
        f"{summary.total:,} judgements in {n_runs} runs, {seeds} seeds. Decided at the full data: {len(decided)} runs "
        f"by the sequential test (the reference; {size:,} judgements), {binomial} by the exact binomial test.",
        f"{'order':<9}{'(a) all runs':>18}{'(a) decided runs':>20}{'same decisions':>16}{'(b) to rho>=0.95':>20}",
    ]
    for order in ORDERS:
        agree = np.mean(summary.agreement(order))
        ranking = summary.ranking[order]
        cell_b = _mean_sd([judgements_to_target(r, summary.total) for r in ranking]) if ranking else "-"
        lines.append(
            f"{order:<9}{_mean_sd([r.released for r in summary.decisions[order]]):>18}"
            f"{_mean_sd(summary.spent_on_decided(order)):>20}{f'{agree:.1f}/{n_runs}':>16}{cell_b:>20}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=Path, default=DEFAULT_VOTES)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10, help="prompts a run releases per round")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--prior", type=float, default=1.0, help="Beta(c, c) mixture of the sequential test")
    args = parser.parse_args(argv)
    summary = replay_summary(args.votes, seeds=args.seeds, batch=args.batch, alpha=args.alpha, prior=args.prior)
    print(format_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
