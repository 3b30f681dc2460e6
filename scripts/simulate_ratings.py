"""Simulate pairwise judgements from known abilities, discriminations, tie threshold and raters (noisy ones too).

Design, as the hub runs experiments: each task compares one random pair of systems on a block of prompts (default
10), judged by `raters_per_item` distinct raters who each see the whole block, left/right order random. Outcomes
follow the fitted model: x = w_r a_k (t_A - t_B) + b_r pos, P(A) = s(x - tau), P(B) = s(-x - tau), tie the rest.

    python scripts/simulate_ratings.py --judgements 100000 --out ratings.jsonl   # the hub's export format
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evaluation.judgements import RATINGS_EXPORT_FIELDS as EXPORT_FIELDS  # noqa: E402
from evaluation.judgements import Judgements  # noqa: E402


@dataclass(frozen=True)
class Truth:
    """The generating parameters; abilities are not centred (compare differences, or subtract the anchor's)."""

    abilities: np.ndarray  # (n_systems,)
    discrimination: np.ndarray  # (n_prompts,)
    tau: float
    rater_reliability: np.ndarray  # (n_raters,)
    rater_bias: np.ndarray  # (n_raters,)
    noisy_rater: np.ndarray  # (n_raters,) bool


def aligned(values: np.ndarray, all_labels: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """values (indexed like all_labels, e.g. a Truth field and the simulated judgements' labels) in the order of
    labels (e.g. a fit's systems or prompts); every label must be in all_labels."""
    index = {label: i for i, label in enumerate(all_labels)}
    return values[[index[label] for label in labels]]


def _logistic(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _distinct_draws(rng: np.random.Generator, rows: int, population: int, size: int) -> np.ndarray:
    """(rows, size) draws without replacement within each row (smallest random keys, in chunks to bound memory)."""
    if size > population:
        raise ValueError(f"cannot draw {size} distinct items from {population}")
    chunk = max(1, 4_000_000 // population)
    parts = [
        np.argpartition(rng.random((min(chunk, rows - start), population)), size - 1, axis=1)[:, :size]
        for start in range(0, rows, chunk)
    ]
    return np.concatenate(parts)


def simulate(
    n_judgements: int,
    n_systems: int,
    n_prompts: int,
    *,
    tau: float = 0.5,
    noisy_rater_share: float = 0.0,
    n_raters: int = 100,
    seed: int = 0,
    sd_ability: float = 1.0,
    sd_log_discrimination: float = 0.5,
    noisy_reliability: float = 0.1,
    sd_rater_bias: float = 0.0,
    auto_tie_share: float = 0.0,
    block: int = 10,
    raters_per_item: int = 3,
) -> tuple[Judgements, Truth]:
    """Judgements (exactly n_judgements) drawn from the model with the returned truth; deterministic given seed."""
    rng = np.random.default_rng(seed)
    abilities = rng.normal(0.0, sd_ability, n_systems)
    discrimination = np.exp(rng.normal(0.0, sd_log_discrimination, n_prompts))
    noisy = np.zeros(n_raters, dtype=bool)
    noisy[rng.choice(n_raters, round(noisy_rater_share * n_raters), replace=False)] = True
    reliability = np.where(noisy, noisy_reliability, 1.0)
    bias = rng.normal(0.0, sd_rater_bias, n_raters) if sd_rater_bias > 0 else np.zeros(n_raters)

    per_task = block * raters_per_item
    n_tasks = -(-n_judgements // per_task)
    first = rng.integers(0, n_systems, n_tasks)
    second = (first + rng.integers(1, n_systems, n_tasks)) % n_systems  # a different system, uniform
    task_prompts = _distinct_draws(rng, n_tasks, n_prompts, block)
    task_raters = _distinct_draws(rng, n_tasks, n_raters, raters_per_item)

    task = np.repeat(np.arange(n_tasks), per_task)[:n_judgements]
    slot = np.tile(np.arange(per_task), n_tasks)[:n_judgements]
    system_a, system_b = first[task], second[task]
    prompt = task_prompts[task, slot % block]
    rater = task_raters[task, slot // block]
    left_is_a = rng.integers(0, 2, n_judgements).astype(np.int8)
    pos = np.where(left_is_a == 1, 1.0, -1.0)
    x = reliability[rater] * discrimination[prompt] * (abilities[system_a] - abilities[system_b]) + bias[rater] * pos
    u = rng.random(n_judgements)
    p_a, p_b = _logistic(x - tau), _logistic(-x - tau)
    outcome = np.where(u < p_a, 1, np.where(u < p_a + p_b, -1, 0)).astype(np.int8)
    auto_tie = rng.random(n_judgements) < auto_tie_share
    outcome[auto_tie] = 0
    judgements = Judgements(
        systems=tuple(f"sys{i:03d}" for i in range(n_systems)),
        prompts=tuple(f"p{i:05d}" for i in range(n_prompts)),
        raters=tuple(f"r{i:04d}" for i in range(n_raters)),
        experiments=tuple(f"task{i:06d}" for i in range(n_tasks)),
        datasets=("sim",),
        system_a=system_a.astype(np.int32),
        system_b=system_b.astype(np.int32),
        prompt=prompt.astype(np.int32),
        rater=np.where(auto_tie, -1, rater).astype(np.int32),
        outcome=outcome,
        auto_tie=auto_tie,
        left_is_a=np.where(auto_tie, -1, left_is_a).astype(np.int8),
        excluded=np.zeros(n_judgements, dtype=bool),
        experiment=task.astype(np.int32),
        dataset=np.zeros(n_judgements, dtype=np.int32),
    )
    truth = Truth(abilities, discrimination, tau, reliability, bias, noisy)
    return judgements, truth


def export_records(j: Judgements) -> list[dict]:
    """The judgements as rows of the hub's ratings export (kind "ratings", schema version 1)."""
    rows = []
    outcome_name = {1: "A", -1: "B", 0: "tie"}
    for i in range(len(j)):
        left = {1: "A", 0: "B"}.get(int(j.left_is_a[i]))
        outcome = outcome_name[int(j.outcome[i])]
        choice = None
        if not j.auto_tie[i]:
            choice = "tie" if outcome == "tie" else ("left" if outcome == left else "right")
        row = dict.fromkeys(EXPORT_FIELDS)
        row.update(
            rating_id=i + 1,
            experiment_id=j.experiments[j.experiment[i]],
            dataset=j.datasets[j.dataset[i]],
            prompt_id=j.prompts[j.prompt[i]],
            item_kind="pair",
            system_a=j.systems[j.system_a[i]],
            system_b=j.systems[j.system_b[i]],
            left=left,
            choice=choice,
            outcome=outcome,
            auto_tie=bool(j.auto_tie[i]),
            rater=j.raters[j.rater[i]] if j.rater[i] >= 0 else None,
            backend="import",
            excluded=bool(j.excluded[i]),
        )
        rows.append(row)
    return rows


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_ratings(j: Judgements, path: Path) -> None:
    """Write the export as JSONL (header line first) or, for a .csv path, CSV (empty cell = null)."""
    rows = export_records(j)
    if path.suffix.lower() == ".csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(EXPORT_FIELDS)
            for row in rows:
                writer.writerow([_csv_cell(value) for value in row.values()])
        return
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"schema_version": 1, "kind": "ratings", "fields": list(EXPORT_FIELDS)}) + "\n")
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=10_000)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--raters", type=int, default=100)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--noisy-rater-share", type=float, default=0.0)
    parser.add_argument("--auto-tie-share", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="ratings file to write (.jsonl or .csv)")
    parser.add_argument("--truth", type=Path, help="optional JSON file for the generating parameters")
    args = parser.parse_args(argv)
    judgements, truth = simulate(
        args.judgements,
        args.systems,
        args.prompts,
        tau=args.tau,
        noisy_rater_share=args.noisy_rater_share,
        n_raters=args.raters,
        auto_tie_share=args.auto_tie_share,
        seed=args.seed,
    )
    write_ratings(judgements, args.out)
    if args.truth:
        payload = {
            "abilities": dict(zip(judgements.systems, truth.abilities.tolist(), strict=True)),
            "discrimination": dict(zip(judgements.prompts, truth.discrimination.tolist(), strict=True)),
            "tau": truth.tau,
            "noisy_raters": [r for r, noisy in zip(judgements.raters, truth.noisy_rater, strict=True) if noisy],
        }
        args.truth.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(judgements):,} judgements to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
