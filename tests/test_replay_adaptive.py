"""Replaying the real ChatEval judgements: adaptive order reaches the full data's answers no later than random."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import replay_adaptive

SEEDS = 3


@pytest.fixture(scope="module")
def summary(shared_data: Path):
    result = replay_adaptive.replay_summary(shared_data / "votes.csv", seeds=SEEDS)
    print("\n" + replay_adaptive.format_table(result))
    return result


def _not_worse(adaptive: list[float], random: list[float]) -> bool:
    """Adaptive mean at most random mean plus three standard errors of the difference (pooled over seeds)."""
    a, r = np.asarray(adaptive, float), np.asarray(random, float)
    pooled = np.sqrt((a.var(ddof=1) + r.var(ddof=1)) / 2)
    return a.mean() <= r.mean() + 3 * pooled * np.sqrt(1 / len(a) + 1 / len(r))


def test_reference_decisions_agree_with_the_binomial_test(summary):
    """The anytime-valid test is the more cautious one: whatever it decides on the full data, the exact binomial
    test decides the same way."""
    decided = {run: d for run, d in summary.reference.items() if d is not None}
    assert decided
    assert all(summary.binomial[run] == d for run, d in decided.items())


def test_replays_stop_at_the_reference_decisions(summary):
    for order in ("random", "adaptive"):
        for result in summary.decisions[order]:
            for run, reference in summary.reference.items():
                assert result.spent[run] <= summary.sizes[run]
                if reference is not None:  # decided on the full data: decided the same way, in either order
                    assert result.decisions[run] == reference
                elif result.decisions[run] is None:  # undecided runs spend all their data
                    assert result.spent[run] == summary.sizes[run]
            assert result.released == sum(result.spent.values()) <= summary.total


def test_adaptive_order_needs_no_more_judgements_than_random(summary):
    assert _not_worse(summary.spent_on_decided("adaptive"), summary.spent_on_decided("random"))
    assert _not_worse(
        [r.released for r in summary.decisions["adaptive"]], [r.released for r in summary.decisions["random"]]
    )
    to_target = {
        order: [replay_adaptive.judgements_to_target(r, summary.total) for r in summary.ranking[order]]
        for order in ("random", "adaptive")
    }
    assert all(n < summary.total for n in to_target["adaptive"])  # the ranking target is reached before the end
    assert _not_worse(to_target["adaptive"], to_target["random"])
