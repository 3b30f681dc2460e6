"""The report card recovers known truth: simulated judges with a known swap rate (position-driven on a share of
pairs), a known preference for the longer response, noise and unparseable answers, against simulated humans with a
known length preference of their own, over 300 data sets. The truths are computed here by exact enumeration of the
simulation's model, not by the report's code."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluation.judgements import from_records
from evaluation.judges.files import JudgeFile, JudgeRecord
from evaluation.judges.report import report_card

SETS, ITEMS, RATERS = 300, 200, 3
SWAP = 0.2  # share of pairs where the judge just names the response shown first (in both orders)
LONGER = 0.3  # share of the other pairs where it names the longer response, whatever its quality
JUDGE_OPINION = {"t": 0.8, "tie": 0.1, "n": 0.1}  # otherwise: the better response (t), a tie, the worse one (n)
UNPARSEABLE = 0.05  # one order unreadable
HUMAN_LONGER = 0.6  # the longer response is the better one this often (the humans' own length preference)
HUMAN_VOTE = {"t": 0.6, "tie": 0.2, "n": 0.2}  # each rater's vote


def _majority(votes: tuple[str, ...]) -> str:
    counts = {label: votes.count(label) for label in set(votes)}
    top = max(counts.values())
    winners = [label for label, count in counts.items() if count == top]
    return winners[0] if len(winners) == 1 else "tie"


def truths() -> dict[str, float]:
    """Expected figures by exact enumeration over: which side is better and longer, the judge's answer, the votes."""
    majority: dict[str, float] = {"t": 0.0, "tie": 0.0, "n": 0.0}
    for votes in itertools.product(HUMAN_VOTE, repeat=RATERS):
        majority[_majority(votes)] += float(np.prod([HUMAN_VOTE[v] for v in votes]))
    joint = np.zeros((3, 3))  # absolute labels A, tie, B: judge rows, human majority columns
    index = {"A": 0, "tie": 1, "B": 2}
    judge_longer = judge_decided = human_longer = human_decided = 0.0
    for better, longer_is_better in itertools.product("AB", (True, False)):
        p_case = 0.5 * (HUMAN_LONGER if longer_is_better else 1 - HUMAN_LONGER)
        worse = "B" if better == "A" else "A"
        longer = better if longer_is_better else worse
        judge = {better: 0.0, worse: 0.0, "tie": SWAP}  # position-driven: inconsistent, a tie
        judge[longer] += (1 - SWAP) * LONGER
        for role, share in JUDGE_OPINION.items():
            judge[{"t": better, "n": worse, "tie": "tie"}[role]] += (1 - SWAP) * (1 - LONGER) * share
        humans = {better: majority["t"], worse: majority["n"], "tie": majority["tie"]}
        for j, h in itertools.product(judge, humans):
            joint[index[j], index[h]] += p_case * judge[j] * humans[h]
        judge_longer += p_case * judge[longer] / (1 - SWAP)  # among consistent pairs
        judge_decided += p_case * (judge[better] + judge[worse]) / (1 - SWAP)
        human_longer += p_case * humans[longer]
        human_decided += p_case * (humans[better] + humans[worse])
    po, pe = np.trace(joint), float(joint.sum(axis=1) @ joint.sum(axis=0))
    return {
        "consistency": 1 - SWAP,
        "share_graded": 1 - UNPARSEABLE,
        "agreement": float(po),
        "kappa": float((po - pe) / (1 - pe)),
        "judge_longer": judge_longer / judge_decided,
        "human_longer": human_longer / human_decided,
    }


def _draw(rng: np.random.Generator, shares: dict[str, float], size) -> np.ndarray:
    """Roles ("t", "tie", "n") drawn with the given shares."""
    return np.asarray(list(shares))[rng.choice(len(shares), size=size, p=list(shares.values()))]


def simulate(rng: np.random.Generator):
    """One data set: ITEMS items of systems x and y, RATERS human votes each, and the judge's two orders."""
    tokens = rng.integers(1, 60, size=(ITEMS, 2))
    tokens[:, 1] += tokens[:, 1] >= tokens[:, 0]  # never equal: the second skips the first's value
    longer = np.where(tokens[:, 0] > tokens[:, 1], "A", "B")
    other = {"A": "B", "B": "A", "tie": "tie"}
    better = np.where(rng.random(ITEMS) < HUMAN_LONGER, longer, np.where(longer == "A", "B", "A"))
    votes = _draw(rng, HUMAN_VOTE, (ITEMS, RATERS))
    flipped = rng.random((ITEMS, RATERS)) < 0.5  # these raters saw the pair as y vs x
    swapped = rng.random(ITEMS) < SWAP
    follows_length = rng.random(ITEMS) < LONGER
    opinions = _draw(rng, JUDGE_OPINION, ITEMS)
    unreadable = rng.random(ITEMS) < UNPARSEABLE
    humans, records = [], []
    for item in range(ITEMS):
        prompt, good = f"p{item}", str(better[item])
        by_role = {"t": good, "n": other[good], "tie": "tie"}
        for rater in range(RATERS):
            vote = by_role[str(votes[item, rater])]
            if flipped[item, rater]:
                row = {"system_a": "y", "system_b": "x", "outcome": other[vote]}
            else:
                row = {"system_a": "x", "system_b": "y", "outcome": vote}
            humans.append({**row, "prompt_id": prompt, "rater": f"r{rater}", "dataset": "sim"})
        if swapped[item]:
            ab, ba = "A", "B"  # names the response shown first, in both orders
        else:
            ab = ba = str(longer[item]) if follows_length[item] else by_role[str(opinions[item])]
        if unreadable[item]:
            ab = "unparseable"
        outcome = None if "unparseable" in (ab, ba) else (ab if ab == ba else "tie")
        record = JudgeRecord("sim", prompt, "x", "y", "x", "y", outcome, False, ab, ba, *tokens[item].tolist())
        records.append(record)
    return from_records(humans), JudgeFile("judge:sim|pairwise-v1|local", False, tuple(records))


@pytest.fixture(scope="module")
def cards():
    rng = np.random.default_rng(20261123)
    return [report_card(*simulate(rng)).to_dict() for _ in range(SETS)]


FIGURES = {
    "consistency": lambda card: card["position_consistency"],
    "agreement": lambda card: card["human_agreement"]["agreement"],
    "judge_longer": lambda card: card["length_preference"]["judge_all_items"],
    "human_longer": lambda card: card["length_preference"]["humans"],
}


@pytest.mark.parametrize("figure", sorted(FIGURES))
def test_estimates_centre_on_the_truth_and_intervals_cover_it(cards, figure):
    truth = truths()[figure]
    values = [FIGURES[figure](card) for card in cards]
    shares = np.array([v["share"] for v in values])
    standard_error = shares.std(ddof=1) / np.sqrt(SETS)
    assert abs(shares.mean() - truth) < 4 * standard_error + 1e-3, (figure, shares.mean(), truth)
    covered = np.mean([v["interval"][0] <= truth <= v["interval"][1] for v in values])
    print(f"{figure}: truth {truth:.4f}, mean {shares.mean():.4f}, Wilson coverage {covered:.3f}")
    assert 0.92 <= covered <= 0.98, (figure, covered)


def test_kappa_and_coverage_recover_the_truth(cards):
    truth = truths()
    kappas = np.array([card["human_agreement"]["cohen_kappa"] for card in cards])
    assert abs(kappas.mean() - truth["kappa"]) < 0.01, (kappas.mean(), truth["kappa"])
    graded = np.array([card["coverage"]["share_graded"] for card in cards])
    assert abs(graded.mean() - truth["share_graded"]) < 4 * graded.std(ddof=1) / np.sqrt(SETS)
    # the judge's length bias shows: it prefers the longer response clearly more often than the humans do
    gaps = np.array([card["length_preference"]["difference"] for card in cards])
    assert abs(gaps.mean() - (truth["judge_longer"] - truth["human_longer"])) < 0.01
    assert truth["judge_longer"] - truth["human_longer"] > 0.1
