"""The assistance-effect estimators (evaluation.assistance_effect) against scipy's t-tests, on hand-made examples,
and by simulation with known truth (evaluation.assistance_simulation): the estimate recovers the effect and the 95%
interval covers it at the nominal rate; with no effect the one-sided test rejects at about 5%.
The large version (thousands of data sets, power) is scripts/bench_assistance_effect.py."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from evaluation.assistance_effect import agreement_effect, assistance_effects, cluster_effect, mean_interval
from evaluation.assistance_outcomes import (
    agreement_with_others,
    canonical_answer,
    equals_suggestion,
    kept_fraction,
    log_times,
)
from evaluation.assistance_simulation import Scenario, simulate, truth
from evaluation.errors import InvalidInputError
from evaluation.randomisation import assign_arm

# 300 data sets: a correct 95% interval covers with sd sqrt(.95 * .05 / 300) = 0.0126; the band is +-3.2 sd.
N = 300
BAND = (0.91, 0.99)


def _effect(data: dict, values: np.ndarray, treatment: str, alternative: str, paired: bool = False):
    units = data["conversations"] if paired else data["participants"]
    return cluster_effect(
        values,
        units,
        data["arms"],
        treatment=treatment,
        control="unassisted",
        alternative=alternative,  # type: ignore[arg-type]
        outcome="x",
        pairs=data["participants"] if paired else None,
    )


def _coverage(scenario: Scenario, n: int, seed: int, paired: bool = False) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    target = truth(scenario)
    hits: dict[str, list] = {}
    for _ in range(n):
        data = simulate(rng, scenario)
        log_t = log_times(data["handling_ms"])
        matches = equals_suggestion(data["answers"], data["suggestions"])
        for key, values, alternative in (("log_time", log_t, "less"), ("equals_suggestion", matches, "greater")):
            e = _effect(data, values, "assisted", alternative, paired)
            hits.setdefault(key, []).append((e.covers(target["assisted"][key]), e.p_one_sided < 0.05, e.estimate))
    result = {}
    for key, rows in hits.items():
        covered, rejected, estimates = map(np.asarray, zip(*rows, strict=True))
        result[key] = {
            "coverage": covered.mean(),
            "rejection": rejected.mean(),
            "bias_z": (estimates.mean() - target["assisted"][key]) / (estimates.std(ddof=1) / math.sqrt(n)),
        }
    return result


@pytest.mark.parametrize("paired", [False, True], ids=["by-participant", "by-conversation"])
def test_time_and_over_reliance_recover_a_known_effect(paired):
    scenario = Scenario(
        randomise="conversation" if paired else "participant", reliance=0.4, assisted_log_effect=math.log(0.75)
    )
    result = _coverage(scenario, N, seed=11 if paired else 7, paired=paired)
    for key, figures in result.items():
        assert BAND[0] <= figures["coverage"] <= BAND[1], (key, figures)
        assert abs(figures["bias_z"]) < 3.5, (key, figures)  # the mean estimate is the true effect
        assert figures["rejection"] > 0.2, (key, figures)  # the effects are there and sometimes found


@pytest.mark.parametrize("paired", [False, True], ids=["by-participant", "by-conversation"])
def test_no_effect_rejects_at_the_nominal_rate(paired):
    scenario = Scenario(randomise="conversation" if paired else "participant").null()
    result = _coverage(scenario, N, seed=23 if paired else 19, paired=paired)
    for key, figures in result.items():
        assert BAND[0] <= figures["coverage"] <= BAND[1], (key, figures)
        assert 0.015 <= figures["rejection"] <= 0.09, (key, figures)  # one-sided 5%: sd 0.0126


def test_agreement_interval_covers_a_known_effect():
    """The jackknife interval is conservative (about 98-99% in the bench); it must never under-cover."""
    scenario = Scenario(participants=16, items=40, items_per_participant=16, realtime_skill_shift=0.15)
    rng = np.random.default_rng(5)
    target = truth(scenario)["realtime"]["agreement"]
    covered, estimates = [], []
    for _ in range(80):
        d = simulate(rng, scenario)
        e = agreement_effect(
            items=d["items"],
            answers=d["answers"],
            categorical=np.ones(len(d["items"]), dtype=bool),
            participants=d["participants"],
            units=d["participants"],
            arms=d["arms"],
            treatment="realtime",
            pairs=None,
        )
        covered.append(e.covers(target))
        estimates.append(e.estimate)
    assert np.mean(covered) >= 0.9
    assert abs(np.mean(estimates) - target) < 3 * np.std(estimates) / math.sqrt(80)


def test_participant_design_is_welch_on_participant_means():
    rng = np.random.default_rng(3)
    participants = np.repeat(np.arange(9), 5)
    arms = np.where(participants < 4, "assisted", "unassisted")
    y = rng.normal(size=45) + (arms == "assisted") * 0.5
    e = cluster_effect(
        y, participants, arms, treatment="assisted", control="unassisted", alternative="less", outcome="y"
    )
    means = np.array([y[participants == p].mean() for p in range(9)])
    a, b = means[:4], means[4:]
    golden = stats.ttest_ind(a, b, equal_var=False, alternative="less")
    two = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert e.estimate == pytest.approx(a.mean() - b.mean())
    assert e.p_one_sided == pytest.approx(golden.pvalue)
    assert (e.low, e.high) == (pytest.approx(two.low), pytest.approx(two.high))
    assert e.one_sided_bound == pytest.approx(golden.confidence_interval(0.95).high)
    assert (e.units_treatment, e.units_control, e.annotations_treatment) == (4, 5, 20)


def test_conversation_design_is_the_paired_t_test_over_participants():
    # participant p: two conversations per arm; the paired test runs on each participant's difference of arm means
    rng = np.random.default_rng(4)
    rows = [(p, c, "assisted" if c % 2 else "unassisted") for p in range(6) for c in range(4) for _ in range(3)]
    participants = [p for p, _, _ in rows]
    conversations = [p * 10 + c for p, c, _ in rows]
    arms = [a for _, _, a in rows]
    y = rng.normal(size=len(rows))
    e = cluster_effect(
        y, conversations, arms, treatment="assisted", control="unassisted", alternative="less", outcome="y",
        pairs=participants,
    )  # fmt: skip
    conv_mean = {k: y[np.asarray(conversations) == k].mean() for k in set(conversations)}
    per = {(p, a): np.mean([conv_mean[p * 10 + c] for c in range(4) if (c % 2 == 1) == (a == "assisted")])
           for p in range(6) for a in ("assisted", "unassisted")}  # fmt: skip
    a = np.array([per[(p, "assisted")] for p in range(6)])
    b = np.array([per[(p, "unassisted")] for p in range(6)])
    golden = stats.ttest_rel(a, b, alternative="less")
    assert e.design == "paired" and e.df == 5
    assert e.estimate == pytest.approx((a - b).mean())
    assert e.p_one_sided == pytest.approx(golden.pvalue)
    assert e.p_two_sided == pytest.approx(stats.ttest_rel(a, b).pvalue)


def test_too_few_participants_say_so_and_give_no_interval():
    e = cluster_effect([1.0, 2.0, 3.0], [1, 2, 3], ["assisted", "unassisted", "unassisted"], treatment="assisted",
                       control="unassisted", alternative="less", outcome="y")  # fmt: skip
    assert e.estimate is None and e.low is None and e.p_one_sided is None
    assert e.note == (
        "too few participants to estimate: 1 in assisted and 2 in unassisted with annotations "
        "(at least 2 in each needed)"
    )


def test_a_participant_in_two_arms_is_refused_unless_paired():
    with pytest.raises(InvalidInputError, match="two arms"):
        cluster_effect([1.0, 2.0], [1, 1], ["assisted", "unassisted"], treatment="assisted", control="unassisted",
                       alternative="less", outcome="y")  # fmt: skip


def test_agreement_with_other_unassisted_answers():
    items = ["m1", "m1", "m1", "m1", "m2", "m2"]
    answers = ["yes", "yes", "no", "yes", "a", "b"]
    reference = [True, True, True, False, True, False]
    got = agreement_with_others(items, answers, reference)
    # row 0: others in the reference are rows 1 (yes) and 2 (no) -> 1/2; row 3 (not reference): rows 0, 1, 2 -> 2/3
    assert got[:4].tolist() == [0.5, 0.5, 0.0, pytest.approx(2 / 3)]
    assert math.isnan(got[4]) and got[5] == 0.0  # row 4 has no other reference answer


def test_answers_compare_by_meaning():
    assert canonical_answer(["b", "a"]) == canonical_answer(["a", "b"])
    assert canonical_answer(" Yes ") == canonical_answer("yes")
    assert canonical_answer(3) == canonical_answer(3.0) != canonical_answer(True)
    assert equals_suggestion([["x", "y"], 2, "no"], [["y", "x"], None, "yes"]).tolist()[0] == 1.0
    assert math.isnan(equals_suggestion([1], [None])[0])


def test_kept_fraction_counts_draft_words_kept_in_order():
    assert kept_fraction("the cat sat on the mat", "the cat sat on the mat") == 1.0
    assert kept_fraction("the cat sat on the mat", "a dog stood there") == 0.0
    assert kept_fraction("the cat sat on the mat", "the black cat sat on a mat") == pytest.approx(5 / 6)
    assert kept_fraction("", "anything") == 1.0


def test_handling_times_must_be_positive():
    assert np.isnan(log_times([None, 1000.0])[0]) and log_times([None, 1000.0])[1] == 0.0
    with pytest.raises(InvalidInputError, match="handling_ms"):
        log_times([0.0])


def test_mean_interval_of_participant_means():
    got = mean_interval([0.2, 0.4, 1.0, 0.6], ["p", "p", "q", "r"])
    means = np.array([0.3, 1.0, 0.6])
    half = stats.t.ppf(0.975, 2) * means.std(ddof=1) / math.sqrt(3)
    assert got["mean"] == pytest.approx(means.mean()) and got["high"] == pytest.approx(means.mean() + half)
    assert mean_interval([0.5], ["p"])["note"].startswith("too few participants")


def test_report_has_every_outcome_per_arm():
    data = simulate(np.random.default_rng(1), Scenario(participants=12))
    report = assistance_effects(**data)
    for arm in ("assisted", "realtime"):
        assert set(report[arm]) == {"log_time", "seconds", "agreement", "equals_suggestion", "time_ratio"}
        assert report[arm]["log_time"]["units_treatment"] == 4
    with pytest.raises(InvalidInputError, match="unknown arm"):
        assistance_effects(**{**data, "arms": ["control"] * len(data["arms"])})


def test_assign_arm_is_deterministic_and_balanced_in_blocks():
    arms = ("unassisted", "assisted", "realtime")
    first = [assign_arm(42, i, arms) for i in range(300)]
    assert first == [assign_arm(42, i, arms) for i in range(300)]  # a pure function of seed and position
    assert first != [assign_arm(43, i, arms) for i in range(300)]
    for block in range(100):
        assert sorted(first[3 * block : 3 * block + 3]) == sorted(arms)
    doubled = [assign_arm(7, i, arms, block_repeats=2) for i in range(60)]
    assert all(Counter(doubled[i : i + 6]) == Counter({a: 2 for a in arms}) for i in range(0, 60, 6))
    # every order of a block is drawn: each arm comes first in about a third of 3,000 blocks
    leads = Counter(assign_arm(9, 3 * b, arms) for b in range(3_000))
    assert all(abs(count - 1_000) < 120 for count in leads.values())
    assert assign_arm(1, 0, ["only"]) == "only"


@pytest.mark.parametrize(
    ("seed", "position", "arms", "field"),
    [(-1, 0, ["a", "b"], "seed"), (True, 0, ["a"], "seed"), (1, -3, ["a"], "position"), (1, 0, ["a", "a"], "arms"),
     (1, 0, [], "arms")],
)  # fmt: skip
def test_assign_arm_refuses_bad_input(seed, position, arms, field):
    with pytest.raises(InvalidInputError, match=field):
        assign_arm(seed, position, arms)
