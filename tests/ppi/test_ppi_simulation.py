"""Prediction-powered ranking checked by simulation with known truth (evaluation.ppi.simulate): systems with known
abilities, humans answering per the model on a random share of each pair's items, a judge with known position
bias, length bias and noise answering every item in both orders."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.ppi.estimate import human_estimate, judge_estimate, ppi_estimate
from evaluation.ppi.report import rank_sets, wald_intervals
from evaluation.ppi.simulate import Scenario, simulate, truth

LEVEL = 0.95
N_DATASETS = 1000
# The pooled coverage over the 5 non-anchor systems averages 5 correlated Bernoulli(0.95) per data set, so its
# standard deviation is at most one system's: sqrt(0.95 * 0.05 / 1000) = 0.0069. The band 93-97% is
# +-2.9 of those; a correct method falls outside it with probability below 0.4%.
BAND = (0.93, 0.97)


def _run(scenario: Scenario, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    target = truth(scenario)
    true_rank = np.argsort(np.argsort(-target)) + 1
    result: dict[str, list] = {
        "ppi": [],
        "human": [],
        "judge": [],
        "ppi_width": [],
        "human_width": [],
        "ranks": [],
        "lam": [],
    }
    for _ in range(n):
        items = simulate(rng, scenario)
        for name, fit in (("ppi", ppi_estimate), ("human", human_estimate), ("judge", judge_estimate)):
            e = fit(items, 0)
            low, high = wald_intervals(e, LEVEL)[1:].T
            result[name].append((low <= target[1:]) & (target[1:] <= high))
            if name != "judge":
                result[f"{name}_width"].append(high - low)
            if name == "ppi":
                sets = rank_sets(e, LEVEL)
                result["ranks"].append(np.all((sets[:, 0] <= true_rank) & (true_rank <= sets[:, 1])))
                result["lam"].append(e.lam)
    return {key: np.asarray(value) for key, value in result.items()}


@pytest.fixture(scope="module")
def biased_judge():
    return _run(Scenario(), N_DATASETS, seed=2024)


def test_ppi_intervals_cover_the_human_target_at_the_nominal_rate(biased_judge):
    coverage = biased_judge["ppi"].mean()
    assert BAND[0] <= coverage <= BAND[1], coverage
    per_system = biased_judge["ppi"].mean(axis=0)  # each over 1000 independent data sets: sd 0.0069
    assert np.all(np.abs(per_system - LEVEL) <= 3.3 * math.sqrt(LEVEL * (1 - LEVEL) / N_DATASETS)), per_system


def test_ppi_intervals_are_narrower_than_human_only(biased_judge):
    human, ppi = biased_judge["human_width"], biased_judge["ppi_width"]
    assert ppi.mean() < 0.95 * human.mean()
    assert np.all(ppi.mean(axis=0) < human.mean(axis=0))  # for every system
    assert BAND[0] <= biased_judge["human"].mean() <= BAND[1]  # the comparison is between valid intervals
    assert 0.2 < biased_judge["lam"].mean() < 0.8


def test_judge_only_intervals_miss_the_human_target(biased_judge):
    assert biased_judge["judge"].mean() < 0.6  # length bias and its own scale: far below 95%
    assert biased_judge["judge"].mean(axis=0).min() < 0.3


def test_rank_sets_hold_every_true_rank_simultaneously(biased_judge):
    # Bonferroni makes them conservative: all true ranks inside in at least 95% of data sets (sd 0.0069).
    assert biased_judge["ranks"].mean() >= LEVEL - 3.3 * math.sqrt(LEVEL * (1 - LEVEL) / N_DATASETS)


def test_a_judge_blind_to_quality_neither_breaks_coverage_nor_widens_intervals():
    # Prefers the longer response and nothing else: power tuning turns it (almost) off.
    n = 300
    result = _run(Scenario(judge_skill=0.0, judge_length=2.0), n, seed=7)
    tolerance = 3.3 * math.sqrt(LEVEL * (1 - LEVEL) / n)
    assert abs(result["ppi"].mean() - LEVEL) <= tolerance
    assert result["lam"].mean() < 0.15
    assert result["ppi_width"].mean() <= 1.02 * result["human_width"].mean()
    assert result["judge"].mean() < 0.3
