"""Benchmark of the IRT fit: time, recovery and peak memory at 10k, 100k and 1M simulated judgements.

    python scripts/bench_irt.py                      # 50 systems, 1,000 prompts; sizes 10k, 100k, 1M
    python scripts/bench_irt.py --sizes 10000 100000 --pyirt   # add the py-irt reference column

Recovery is the Spearman rank correlation between fitted and true abilities and prompt discriminations. Peak
memory is the largest traced allocation (tracemalloc, which numpy reports to) during a second, untimed fit.
The bootstrap column times `--bootstrap` prompt-level replicates (Newton refits) at each size up to 100k.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

REPO = Path(__file__).resolve().parent.parent
for folder in (REPO, REPO / "scripts"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from simulate_ratings import Truth, aligned, simulate  # noqa: E402

from evaluation.irt.bootstrap import bootstrap_fit  # noqa: E402
from evaluation.irt.model import IrtFit, fit_pairwise_irt  # noqa: E402
from evaluation.judgements import Judgements  # noqa: E402


def recovery(fit: IrtFit, j: Judgements, truth: Truth) -> tuple[float, float]:
    abilities = aligned(truth.abilities, j.systems, fit.systems)
    discrimination = aligned(truth.discrimination, j.prompts, fit.prompts)
    rho_abilities = float(spearmanr(fit.abilities, abilities).statistic)
    rho_discrimination = float(spearmanr(fit.discrimination, discrimination).statistic)
    return rho_abilities, rho_discrimination


def peak_memory_mb(j: Judgements) -> float:
    tracemalloc.start()
    try:
        fit_pairwise_irt(j)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


# --- py-irt reference column (hook) -------------------------------------------------------------------------
# evaluation.irt.pyirt_reference.fit_pyirt(judgements, epochs=..., seed=...) returns an object with `prompts`
# and `discrimination` (aligned). It needs the optional `irt` extra (py-irt + torch); absent, the column is skipped.
def pyirt_column(j: Judgements, truth: Truth, *, epochs: int, seed: int) -> dict[str, Any] | None:
    from evaluation.errors import ConfigurationError
    from evaluation.irt.pyirt_reference import fit_pyirt

    started = time.perf_counter()
    try:
        result = fit_pyirt(j, epochs=epochs, seed=seed)
    except ConfigurationError as exc:  # py-irt (or torch) not installed: the column is left out, with the reason
        print(f"py-irt column skipped: {exc.describe()}", file=sys.stderr)
        return None
    seconds = time.perf_counter() - started
    truth_disc = aligned(truth.discrimination, j.prompts, tuple(result.prompts))
    rho = float(spearmanr(np.asarray(result.discrimination), truth_disc).statistic)
    return {"pyirt_s": seconds, "pyirt_rho_disc": rho}


# ---------------------------------------------------------------------------------------------------------------


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    j, truth = simulate(n, args.systems, args.prompts, tau=args.tau, seed=args.seed, n_raters=args.raters)
    fit_pairwise_irt(j.subset(slice(0, min(n, 2000))))  # warm imports and caches outside the timing
    started = time.perf_counter()
    fit = fit_pairwise_irt(j)
    seconds = time.perf_counter() - started
    rho_abilities, rho_discrimination = recovery(fit, j, truth)
    row: dict[str, Any] = {
        "judgements": n,
        "cells": len(fit.cells.a) if fit.cells is not None else 0,
        "fit_s": seconds,
        "iterations": fit.iterations,
        "converged": fit.converged,
        "rho_abilities": rho_abilities,
        "rho_disc": rho_discrimination,
        "tau": fit.tau,
        "peak_mb": peak_memory_mb(j),
    }
    if args.bootstrap and n <= args.bootstrap_max:
        boot = bootstrap_fit(fit, n_bootstrap=args.bootstrap, seed=args.seed)
        row["bootstrap_s"] = boot.seconds
    if args.pyirt and n <= args.pyirt_max:
        row.update(pyirt_column(j, truth, epochs=args.pyirt_epochs, seed=args.seed) or {})
    return row


COLUMNS = {
    "judgements": "{:,}",
    "cells": "{:,}",
    "fit_s": "{:.2f}",
    "iterations": "{}",
    "rho_abilities": "{:.3f}",
    "rho_disc": "{:.3f}",
    "tau": "{:.3f}",
    "peak_mb": "{:.1f}",
    "bootstrap_s": "{:.2f}",
    "pyirt_s": "{:.1f}",
    "pyirt_rho_disc": "{:.3f}",
}


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    shown = [name for name in COLUMNS if any(name in row for row in rows)]
    text = [[COLUMNS[name].format(row[name]) if name in row else "-" for name in shown] for row in rows]
    widths = [max(len(name), *(len(line[i]) for line in text)) for i, name in enumerate(shown)]
    print(
        f"{args.systems} systems, {args.prompts} prompts, {args.raters} raters, true tau {args.tau}, seed {args.seed}, "
        f"{os.cpu_count()} CPUs; bootstrap_s = {args.bootstrap} replicates (prompts, then judgements within them)"
    )
    print("  ".join(name.rjust(width) for name, width in zip(shown, widths, strict=True)))
    for line in text:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))
    for row in rows:
        if "pyirt_s" in row:
            print(f"{row['judgements']:,}: py-irt / fast fit time ratio {row['pyirt_s'] / row['fit_s']:.0f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--raters", type=int, default=300)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=200, help="replicates to time (0: skip)")
    parser.add_argument("--bootstrap-max", type=int, default=100_000, help="largest size to bootstrap")
    parser.add_argument("--pyirt", action="store_true", help="add the py-irt reference column")
    parser.add_argument("--pyirt-epochs", type=int, default=2000)
    parser.add_argument("--pyirt-max", type=int, default=1_000_000, help="largest size to run py-irt on")
    args = parser.parse_args(argv)
    rows = [run_size(n, args) for n in args.sizes]
    print_table(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
