"""Agreement and rater screening on the 10,704 real ChatEval judgements (../shared/data/chateval/votes.csv).

Each run is one experiment (prompt = item, worker = rater). The golden values are computed here independently:
scikit-learn's cohen_kappa_score over the same rater pairs, statsmodels' fleiss_kappa through aggregate_raters,
and the raters who disagree with unanimous co-raters counted in plain Python. Run with -s to see the figures.
"""

from __future__ import annotations

import csv
import itertools
import statistics
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from evaluation.agreement import agreement
from evaluation.rater_quality import RatingRow, ScreeningThresholds, screen

VOTE = {"0": "A", "1": "B", "-1": "tie"}  # 0 = model_1 (A) better, 1 = model_2 (B) better, -1 = tie
CODE = {"A": 0, "tie": 1, "B": 2}


@pytest.fixture(scope="module")
def votes(shared_data: Path) -> list[dict[str, str]]:
    with (shared_data / "votes.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 10_704
    return rows


def by_run(votes):
    runs = defaultdict(list)
    for row in votes:
        runs[row["run"]].append(row)
    return dict(sorted(runs.items()))


def first_votes(rows) -> dict[tuple[str, str], str]:
    """(prompt, worker) -> the worker's first vote on that prompt (later ones are repeats)."""
    first: dict[tuple[str, str], str] = {}
    for row in rows:
        first.setdefault((row["prompt"], row["worker"]), VOTE[row["vote"]])
    return first


def independent_cohen(first) -> tuple[float, int]:
    per_worker: dict[str, dict[str, str]] = defaultdict(dict)
    for (prompt, worker), label in first.items():
        per_worker[worker][prompt] = label
    kappas = []
    for a, b in itertools.combinations(sorted(per_worker), 2):
        common = sorted(set(per_worker[a]) & set(per_worker[b]))
        if len(common) < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = cohen_kappa_score(
                [per_worker[a][p] for p in common],
                [per_worker[b][p] for p in common],
                weights="linear",
                labels=["A", "tie", "B"],
            )
        if not np.isnan(kappa):
            kappas.append(kappa)
    return float(np.mean(kappas)), len(kappas)


def independent_fleiss(first) -> tuple[float, int, int]:
    """Fleiss' kappa over the prompts with the most common number (2+, larger on a tie) of distinct workers."""
    per_prompt = defaultdict(list)
    for (prompt, _), label in first.items():
        per_prompt[prompt].append(CODE[label])
    sizes = Counter(len(labels) for labels in per_prompt.values() if len(labels) >= 2)
    size = max(sizes, key=lambda k: (sizes[k], k))
    kept = [labels for labels in per_prompt.values() if len(labels) == size]
    table, _ = aggregate_raters(np.array(kept), n_cat=3)
    return float(sm_fleiss_kappa(table, method="fleiss")), len(kept), size


def test_kappas_per_run_match_sklearn_and_statsmodels(votes):
    runs = by_run(votes)
    assert len(runs) == 20
    cohen_figures = []
    print(f"\n{'run':40} {'cohen':>7} {'by-items':>8} {'pairs':>5} {'fleiss':>7} {'items':>5} {'n':>2}")
    for run, rows in runs.items():
        summary = agreement(
            [r["prompt"] for r in rows], [r["worker"] for r in rows], [VOTE[r["vote"]] for r in rows]
        ).with_excluded
        by_items = agreement(
            [r["prompt"] for r in rows], [r["worker"] for r in rows], [VOTE[r["vote"]] for r in rows], weighting="items"
        ).with_excluded
        first = first_votes(rows)
        cohen, pairs = independent_cohen(first)
        fleiss, items, size = independent_fleiss(first)
        assert summary.cohen_kappa == pytest.approx(cohen, abs=1e-9), run
        assert summary.rater_pairs == pairs
        assert summary.fleiss_ratings_per_item == size
        assert summary.fleiss_kappa == pytest.approx(fleiss, abs=1e-9), run
        assert summary.fleiss_items == items
        assert summary.duplicates_dropped == len(rows) - len(first)
        cohen_figures.append(summary.cohen_kappa)
        print(
            f"{run:40} {summary.cohen_kappa:7.3f} {by_items.cohen_kappa:8.3f} {pairs:5d} "
            f"{summary.fleiss_kappa:7.3f} {items:5d} {size:2d}"
        )
    figures = np.array(cohen_figures)
    in_paper_range = int(((figures >= 0.2) & (figures <= 0.54)).sum())
    low, high = figures.min(), figures.max()
    print(f"runs within the paper's .2-.54: {in_paper_range} of {len(figures)}; range {low:.3f}..{high:.3f}")
    # Crowd agreement on open-domain chat is low but positive: most runs within 0 .. 0.6, none far outside.
    assert ((figures > 0) & (figures < 0.6)).mean() >= 0.8
    assert figures.min() > -0.2 and figures.max() < 0.7


def unanimous_disagreement_reference(votes, min_items: int, min_agreement: float) -> set[str]:
    """Workers whose first votes agree with unanimous co-raters (2+ other workers, all the same) too rarely."""
    per_item: dict[str, dict[str, str]] = defaultdict(dict)
    for row in votes:
        per_item[f"{row['run']}/{row['prompt']}"].setdefault(row["worker"], VOTE[row["vote"]])
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # worker -> [unanimous items, agreements]
    for ratings in per_item.values():
        for worker, label in ratings.items():
            others = [v for w, v in ratings.items() if w != worker]
            if len(others) >= 2 and len(set(others)) == 1:
                counts[worker][0] += 1
                counts[worker][1] += label == others[0]
    return {w for w, (n, agree) in counts.items() if n >= min_items and agree / n < min_agreement}


def real_rows(votes) -> list[RatingRow]:
    return [
        RatingRow(
            item=f"{r['run']}/{r['prompt']}",
            rater=r["worker"],
            outcome=VOTE[r["vote"]],
            task=r["hit"],
            seconds_on_task=float(r["assign_secs"]),
        )
        for r in votes
    ]


def test_screening_flags_exactly_the_workers_who_disagree_with_unanimous_co_raters(votes):
    thresholds = ScreeningThresholds()
    expected = unanimous_disagreement_reference(
        votes, thresholds.min_unanimous_items, thresholds.min_unanimous_agreement
    )
    quality = screen(real_rows(votes), thresholds)
    flagged = {q.rater for q in quality if "unanimous_disagreement" in q.flag_codes}
    assert len(expected) >= 3  # the rule has something to find in real data
    assert flagged == expected
    any_flag = [q for q in quality if q.flagged]
    print(
        f"\n{len(quality)} workers; {len(flagged)} disagree with unanimous co-raters, {len(any_flag)} flagged in all: "
        + ", ".join(f"{q.rater} ({'+'.join(q.flag_codes)})" for q in any_flag)
    )
    assert len(any_flag) <= 0.1 * len(quality)


def test_planted_bad_raters_are_flagged_and_the_median_worker_is_not(votes):
    rng = np.random.default_rng(17)
    rows = real_rows(votes)
    items = sorted({r.item for r in rows})
    # A random clicker who took every task of every run, 10 prompts per task at 5 s per judgement.
    rows += [
        RatingRow(item, "RANDOM", str(rng.choice(["A", "tie", "B"])), task=f"random-{i // 10}", seconds_on_task=50.0)
        for i, item in enumerate(items)
    ]
    # An always-left clicker in one run: left/right order randomised per pair, as the hub does.
    one_run = [item for item in items if item.startswith("AMT_NCM_Test_Cakechat_OS/")]
    for i, item in enumerate(one_run):
        left = str(rng.choice(["A", "B"]))
        rows.append(
            RatingRow(item, "LEFTY", left, left=left, choice="left", task=f"left-{i // 10}", seconds_on_task=60.0)
        )
    quality = {q.rater: q for q in screen(rows)}

    random_clicker = quality["RANDOM"]
    assert "unanimous_disagreement" in random_clicker.flag_codes
    assert random_clicker.unanimous_agreement == pytest.approx(1 / 3, abs=0.06)  # chance with three choices
    assert "choice_bias" in quality["LEFTY"].flag_codes

    real = [q for name, q in quality.items() if name not in {"RANDOM", "LEFTY"}]
    measured = sorted(
        (q for q in real if q.unanimous_items >= ScreeningThresholds().min_unanimous_items),
        key=lambda q: q.unanimous_agreement or 0.0,
    )
    median_worker = measured[len(measured) // 2]
    real_median = statistics.median(q.unanimous_agreement or 0.0 for q in measured)
    assert not median_worker.flagged, median_worker.flags
    print(
        f"\nplanted random clicker: agreement with unanimous co-raters {random_clicker.unanimous_agreement:.2f}; "
        f"median real worker {median_worker.rater}: {median_worker.unanimous_agreement:.2f} over "
        f"{median_worker.unanimous_items} items; real median {real_median:.2f}"
    )


def test_excluding_flagged_workers_changes_agreement_consistently(votes):
    """Excluding the flagged workers through `agreement` equals recomputing without their rows."""
    flagged = {q.rater for q in screen(real_rows(votes)) if q.flagged}
    rows = by_run(votes)["AMT_NCM_Test_OSQ_Human2"]
    args = ([r["prompt"] for r in rows], [r["worker"] for r in rows], [VOTE[r["vote"]] for r in rows])
    summary = agreement(*args, excluded=flagged)
    kept = [r for r in rows if r["worker"] not in flagged]
    first = first_votes(kept)
    assert summary.without_excluded.cohen_kappa == pytest.approx(independent_cohen(first)[0], abs=1e-9)
    assert summary.without_excluded.fleiss_kappa == pytest.approx(independent_fleiss(first)[0], abs=1e-9)
    assert summary.excluded_judgements == len(rows) - len(kept)
