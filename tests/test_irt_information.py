"""Expected information per prompt: the closed form against numerical Fisher information, and its use."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from simulate_ratings import aligned, simulate

from evaluation.errors import InvalidInputError
from evaluation.irt.information import expected_information, outcome_probabilities, rank_prompts, select_prompts
from evaluation.irt.model import fit_pairwise_irt
from evaluation.irt.sequential import first_decision

DISCRIMINATION = np.array([0.2, 0.7, 1.0, 2.5, 6.0])


def _numerical_information(a: np.ndarray, gap: float, tau: float, h: float = 1e-5) -> np.ndarray:
    """E[(d/dd log P(outcome))^2] with the three outcome probabilities written out and differentiated numerically."""

    def probabilities(d: float) -> np.ndarray:
        p_a, p_b = 1 / (1 + np.exp(-(a * d - tau))), 1 / (1 + np.exp(a * d + tau))
        return np.stack([p_a, p_b, 1 - p_a - p_b])

    p = probabilities(gap)
    score = (np.log(probabilities(gap + h)) - np.log(probabilities(gap - h))) / (2 * h)
    return np.sum(p * score**2, axis=0)


@pytest.mark.parametrize("tau", [0.05, 0.5, 2.0])
@pytest.mark.parametrize("gap", [0.0, 0.4, -1.3])
def test_closed_form_equals_numerical_fisher_information(tau, gap):
    expected = _numerical_information(DISCRIMINATION, gap, tau)
    assert expected_information(DISCRIMINATION, gap, tau) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("gap", [0.0, 0.4, 3.0])
def test_without_ties_it_is_a_squared_p_one_minus_p(gap):
    p = expit(DISCRIMINATION * gap)
    assert expected_information(DISCRIMINATION, gap, 0.0) == pytest.approx(DISCRIMINATION**2 * p * (1 - p))
    assert expected_information(DISCRIMINATION, gap, 1e-9) == pytest.approx(DISCRIMINATION**2 * p * (1 - p))


def test_probabilities_sum_to_one_and_ties_grow_with_tau():
    for tau in (0.1, 1.0):
        p_a, p_b, p_t = outcome_probabilities(DISCRIMINATION, 0.5, tau)
        assert p_a + p_b + p_t == pytest.approx(np.ones_like(DISCRIMINATION))
    assert np.all(
        outcome_probabilities(DISCRIMINATION, 0.5, 1.0)[2] > outcome_probabilities(DISCRIMINATION, 0.5, 0.1)[2]
    )


def test_at_a_large_gap_the_sharpest_prompt_is_not_the_most_informative():
    info = expected_information(DISCRIMINATION, 3.0, 0.5)
    assert np.argmax(info) not in (0, len(DISCRIMINATION) - 1)  # too flat at one end, a foregone verdict at the other
    assert np.all(np.diff(expected_information(DISCRIMINATION, 0.0, 0.5)) > 0)  # at no gap, sharper is better


@pytest.fixture(scope="module")
def fitted():
    j, truth = simulate(20_000, 8, 150, tau=0.5, sd_log_discrimination=0.8, seed=4)
    return fit_pairwise_irt(j), j, truth


def test_ranking_orders_every_prompt_by_its_information(fitted):
    fit, _, _ = fitted
    a, b = fit.systems[1], fit.systems[3]
    ranked = rank_prompts(fit, a, b)
    assert sorted(item.prompt for item in ranked) == sorted(fit.prompts)
    values = [item.information for item in ranked]
    assert values == sorted(values, reverse=True)
    gap = fit.abilities[1] - fit.abilities[3]
    for item in ranked[:5]:
        assert item.information == pytest.approx(expected_information(fit.discrimination[item.index], gap, fit.tau))
        assert item.p_a + item.p_b + item.p_tie == pytest.approx(1.0)


def test_selection_respects_budget_and_exclusions(fitted):
    fit, _, _ = fitted
    ranked = rank_prompts(fit, 0, 2)
    skip = {ranked[0].prompt, ranked[2].prompt}
    chosen = select_prompts(fit, 0, 2, 4, exclude=skip)
    assert [c.prompt for c in chosen] == [r.prompt for r in ranked if r.prompt not in skip][:4]
    assert select_prompts(fit, 0, 2, 0) == []
    with pytest.raises(InvalidInputError, match="not in the fit"):
        rank_prompts(fit, "no such system", 0)
    with pytest.raises(InvalidInputError, match="two different systems"):
        rank_prompts(fit, 1, 1)


def test_informative_prompts_decide_a_comparison_sooner(fitted):
    """Judgements drawn from the true model on the 15 prompts the fit ranks highest reach a sequential decision
    with fewer judgements than on 15 random prompts."""
    fit, j, truth = fitted
    true_ability = aligned(truth.abilities, j.systems, fit.systems)
    gaps = true_ability[:, None] - true_ability[None, :]
    a, b = np.unravel_index(np.argmin(np.abs(np.abs(gaps) - 0.4)), gaps.shape)  # a modest true difference
    rng = np.random.default_rng(0)
    top = [item.prompt for item in select_prompts(fit, int(a), int(b), 15)]
    random_prompts = list(rng.choice(fit.prompts, 15, replace=False))

    def judgements_needed(prompts: list[str]) -> float:
        disc = aligned(truth.discrimination, j.prompts, prompts)[rng.integers(0, len(prompts), (1000, 3000))]
        p_a, p_b, _ = outcome_probabilities(disc, float(gaps[a, b]), truth.tau)
        u = rng.random(disc.shape)
        outcomes = np.where(u < p_a, 1, np.where(u < p_a + p_b, -1, 0))
        _, used = first_decision(outcomes)
        return float(used.mean())

    informed, uninformed = judgements_needed(top), judgements_needed(random_prompts)
    print(f"\nmean judgements to a decision: top-information prompts {informed:.0f}, random prompts {uninformed:.0f}")
    assert informed < uninformed
