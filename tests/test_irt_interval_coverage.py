"""Coverage of the published 95% bootstrap intervals on 200 small data sets simulated with known truth.

The same bootstrap draws give both the percentile interval the hub published before and the bias-corrected normal
interval it publishes now (scripts/bench_irt_coverage.py, the larger version: 4 shapes x 50 data sets x 100
replicates). Here: 4 systems, 30 prompts, 1,000 judgements, 20 bootstrap replicates per data set (~35 s of CPU).

Pairs (and abilities) of one data set share its draws, so they are not independent; the tolerance treats each data
set as one observation: coverage must not fall below the 0.1% quantile of Binomial(200, 0.95) / 200. Measured:
pairwise 0.855 percentile, 0.939 bias-corrected normal (abilities 0.843, 0.927).
"""

from __future__ import annotations

from bench_irt_coverage import AFTER, BEFORE, Shape, measure
from scipy.stats import binom

SETS = 200
SHAPE = Shape("4 systems, 30 prompts, 1k judgements", 1_000, 4, 30, 20)


def test_pairwise_and_ability_intervals_cover_the_truth_about_95_percent():
    tally = measure(SHAPE, SETS, replicates=20, first_seed=7000)
    low = binom.ppf(0.001, SETS, 0.95) / SETS
    pairs, abilities = tally.coverage("pairs", AFTER), tally.coverage("abilities", AFTER)
    assert low <= pairs <= 0.99, f"pairwise coverage {pairs:.3f} outside [{low:.3f}, 0.99]"
    assert low <= abilities <= 0.99, f"ability coverage {abilities:.3f} outside [{low:.3f}, 0.99]"
    # the percentile intervals of the very same draws fall short: this is what the change fixes
    assert tally.coverage("pairs", BEFORE) < low
    # and the price in width is bounded (17% here, where 20 draws make percentile intervals short; 4% with 100)
    assert tally.mean_width("pairs", AFTER) <= 1.25 * tally.mean_width("pairs", BEFORE)
