"""PPI on the real ChatEval votes with a weak, biased judge built from an automatic measure (the longer response
wins; equal lengths tie): on random 30% subsamples of the human-judged items, PPI covers the full-data human
estimate as often as it should. Needs ../shared/data/chateval (skipped with the reason when absent)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.judgements import from_records
from evaluation.ppi.estimate import PairMeans, estimate, human_estimate, pair_stats, ppi_estimate
from evaluation.ppi.items import Items, paired_items
from evaluation.ppi.report import wald_intervals
from evaluation.ratings_files import read_chateval_votes

# The NCM systems whose responses are public (README of the shared data): vote name -> response file.
RESPONSES = {
    "NCM": "responses/ncm__ncm_original.txt",
    "Cakechat": "responses/ncm__cakechat.txt",
    "Human1": "references/ncm_human_1.txt",
    "Human2": "references/ncm_human_2.txt",
}
FRACTION, N_SUBSAMPLES, LEVEL = 0.3, 400, 0.95


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:200]


@pytest.fixture(scope="module")
def full_items(shared_data: Path) -> Items:
    votes = read_chateval_votes(shared_data / "votes.csv", shared_data / "runs.csv").for_dataset("NCM")
    public = np.isin(np.array(votes.systems)[votes.system_a], list(RESPONSES)) & np.isin(
        np.array(votes.systems)[votes.system_b], list(RESPONSES)
    )
    human = votes.subset(public).compact()
    lengths = {name: [len(line.split()) for line in _lines(shared_data / path)] for name, path in RESPONSES.items()}
    records = []
    for prompt, a, b in {
        (human.prompts[p], human.systems[x], human.systems[y])
        for p, x, y in zip(human.prompt, human.system_a, human.system_b, strict=True)
    }:
        index = int(prompt.split("/")[-1])
        la, lb = lengths[a][index], lengths[b][index]
        outcome = "A" if la > lb else "B" if lb > la else "tie"
        records.append({"prompt_id": prompt, "system_a": a, "system_b": b, "outcome": outcome, "rater": "longer"})
    return paired_items(human, from_records(records))


def _subsample(items: Items, rng: np.random.Generator) -> Items:
    """Keep the human votes of round(30%) of each pair's items, chosen at random; the judge keeps every item."""
    keep = np.zeros(len(items.pair), dtype=bool)
    for p in range(len(items.pair_a)):
        members = np.flatnonzero(items.pair == p)
        keep[rng.choice(members, size=max(2, round(FRACTION * len(members))), replace=False)] = True
    return replace(items, human=np.where(keep, items.human, np.nan), human_votes=np.where(keep, items.human_votes, 0))


def _finite_population(items: Items, anchor: int, lam: float):
    """The PPI estimate with the variance of its distance to the full-data estimate: sampling n of a pair's N items
    without replacement, Var(mean_L(r) - mean_all(r)) = (1 - n/N) Var_L(r) / n with r = y - lam f."""
    st = pair_stats(items)
    lab = items.labelled
    r = items.human[lab] - lam * items.judge[lab]
    g = items.pair[lab]
    size = len(items.pair_a)
    mean_r = np.bincount(g, r, minlength=size) / st.n_lab
    var_r = np.bincount(g, (r - mean_r[g]) ** 2, minlength=size) / (st.n_lab - 1)
    mean = st.y_lab + lam * (st.f_all - st.f_lab)
    return estimate(items, anchor, PairMeans(st.weight, mean, (1 - st.n_lab / st.n_all) * var_r / st.n_lab), lam)


def test_ppi_on_a_30_percent_subsample_covers_the_full_data_estimate(full_items: Items):
    anchor = full_items.systems.index("NCM")
    target = human_estimate(full_items, anchor).abilities
    others = np.arange(len(full_items.systems)) != anchor
    rng = np.random.default_rng(30)
    hits = {"ppi": [], "ppi_fpc": [], "human": []}
    widths = {"ppi": [], "human": []}
    lams = []
    for _ in range(N_SUBSAMPLES):
        sub = _subsample(full_items, rng)
        ppi, human = ppi_estimate(sub, anchor), human_estimate(sub, anchor)
        lams.append(ppi.lam)
        for name, e in (("ppi", ppi), ("human", human), ("ppi_fpc", _finite_population(sub, anchor, ppi.lam))):
            low, high = wald_intervals(e, LEVEL)[others].T
            hits[name].append((low <= target[others]) & (target[others] <= high))
            if name in widths:
                widths[name].append(high - low)
    coverage = {name: float(np.mean(v)) for name, v in hits.items()}
    gain = float(np.mean((np.asarray(widths["human"]) / np.asarray(widths["ppi"])) ** 2))
    print(
        f"\nChatEval NCM, length judge, {N_SUBSAMPLES} subsamples of {FRACTION:.0%}: coverage {coverage}, "
        f"mean lambda {np.mean(lams):.3f}, effective-sample-size gain {gain:.3f}"
    )
    # The subsamples are independent draws from one finite population: per system, coverage is binomial over
    # N_SUBSAMPLES, sd <= sqrt(.95 * .05 / 400) = 0.011; the pooled mean's sd is at most that.
    tolerance = 3.3 * math.sqrt(LEVEL * (1 - LEVEL) / N_SUBSAMPLES)
    assert abs(coverage["ppi_fpc"] - LEVEL) <= tolerance  # nominal once the target's own share is accounted for
    assert coverage["ppi"] >= LEVEL - tolerance  # the plain interval, built for new items, is wider: conservative
    assert coverage["human"] >= LEVEL - tolerance
    assert gain >= 0.97  # never much worse than human-only; a weak judge may give little gain
