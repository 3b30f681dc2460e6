"""Benchmark: the assistance-effect estimators by simulation with known truth (evaluation.assistance_simulation).

For each design (randomised by participant: Welch on participant means; by conversation: paired over participants)
and each scenario (MILO-sized effects, and no effect at all), --datasets simulated studies (--participants in three
arms, a shared item pool) are analysed by evaluation.assistance_effect.assistance_effects and it prints, per arm and
outcome:

  coverage   share of two-sided 95% intervals holding the true effect (want 0.95; binomial sd in brackets)
  reject     share of one-sided tests at 5% rejecting (with no effect: the type-I error, want <= 0.05;
             with an effect: the power)
  bias       mean estimate - true effect, in units of its Monte Carlo standard error

Agreement uses the delete-one-participant jackknife (conservative); `naive` rows show Welch on participant means of
agreement, whose interval is too narrow because agreement depends on other participants' answers.

Usage: python scripts/bench_assistance_effect.py [--datasets N] [--participants P] [--seed S]
(the default 1,000 data sets per scenario take about 15 minutes on the shared 2-core machine)
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import numpy as np

from evaluation.assistance_effect import assistance_effects, cluster_effect
from evaluation.assistance_outcomes import agreement_with_others
from evaluation.assistance_simulation import Scenario, simulate, truth

OUTCOMES = ("log_time", "agreement", "equals_suggestion")


def naive_agreement(data: dict, treatment: str, paired: bool) -> dict:
    arms = np.asarray(data["arms"], dtype=object)
    values = agreement_with_others(data["items"], data["answers"], arms == "unassisted")
    units = data["conversations"] if paired else data["participants"]
    return cluster_effect(
        values,
        units,
        data["arms"],
        treatment=treatment,
        control="unassisted",
        alternative="greater",
        outcome="agreement (naive)",
        pairs=data["participants"] if paired else None,
    ).to_dict()


def run(scenario: Scenario, n: int, rng: np.random.Generator) -> None:
    target = truth(scenario)
    paired = scenario.randomise == "conversation"
    rows: dict[tuple[str, str], list[tuple[bool, bool, float]]] = {}
    started = time.perf_counter()
    skipped = 0
    for _ in range(n):
        data = simulate(rng, scenario)
        report = assistance_effects(**data)
        for arm in ("assisted", "realtime"):
            effects = {key: report[arm][key] for key in OUTCOMES}
            effects["agreement (naive)"] = naive_agreement(data, arm, paired)
            for key, e in effects.items():
                if e["estimate"] is None:
                    skipped += 1
                    continue
                true = target[arm][key.split(" ")[0]]
                rows.setdefault((arm, key), []).append(
                    (e["low"] <= true <= e["high"], e["p_one_sided"] < 0.05, e["estimate"] - true)
                )
    seconds = time.perf_counter() - started
    sd = math.sqrt(0.95 * 0.05 / n)
    print(f"  {n} data sets in {seconds:.1f} s ({1000 * seconds / n:.0f} ms each); {skipped} effects not estimable")
    print(f"  {'arm':<10} {'outcome':<20} {'truth':>8} {'coverage':>9} {'reject':>7} {'bias/se':>8}")
    for (arm, key), values in rows.items():
        covered, rejected, error = (np.asarray(column) for column in zip(*values, strict=True))
        bias_z = error.mean() / (error.std(ddof=1) / math.sqrt(len(error))) if error.std() > 0 else 0.0
        true = target[arm][key.split(" ")[0]]
        print(f"  {arm:<10} {key:<20} {true:>8.4f} {covered.mean():>9.3f} {rejected.mean():>7.3f} {bias_z:>8.2f}")
    print(f"  (coverage sd at 95%: {sd:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--participants", type=int, default=24)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for design in ("participant", "conversation"):
        base = Scenario(participants=args.participants, randomise=design)
        for name, scenario in (("MILO-sized effects", base), ("no effect", base.null())):
            print(
                f"\n== randomised by {design}, {name}: {scenario.participants} participants, {scenario.items} items, "
                f"{scenario.items_per_participant} annotations each; time x{math.exp(scenario.assisted_log_effect):.2f}"
                f" assisted, x{math.exp(scenario.realtime_log_effect):.3f} realtime; reliance {scenario.reliance}"
            )
            run(scenario, args.datasets, rng)
    print("\n== larger study (60 participants), MILO-sized effects, randomised by participant")
    run(replace(Scenario(), participants=60), max(args.datasets // 4, 50), rng)


if __name__ == "__main__":
    main()
