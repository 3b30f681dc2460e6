"""The IRT model's maths: objective and gradients against independent computations, identifiability, exclusions,
the Newton refit, corrections against statsmodels, tiers, the per-experiment test and the JSON report."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import binomtest
from simulate_ratings import simulate
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evaluation.errors import InvalidInputError
from evaluation.irt.bootstrap import BootstrapResult, bootstrap_fit, prompt_weights
from evaluation.irt.likelihood import Priors, aggregate
from evaluation.irt.model import fit_pairwise_irt
from evaluation.irt.newton import newton_refit, newton_system
from evaluation.irt.result import fit_report
from evaluation.irt.significance import (
    PairComparison,
    benjamini_hochberg,
    experiment_tests,
    holm,
    percentile_p_values,
    tiers,
)
from evaluation.judgements import from_records


@pytest.fixture(scope="module")
def small():
    """4,000 judgements, 6 systems, 40 prompts, 30 raters with left biases, a few automatic ties."""
    j, _ = simulate(4000, 6, 40, n_raters=30, sd_rater_bias=0.4, noisy_rater_share=0.2, auto_tie_share=0.02, seed=3)
    return j


def _naive_log_posterior(j, fit_values: dict, priors: Priors, anchor: int, rater_terms: bool) -> float:
    """Direct per-judgement sum of log P(outcome), written from the model's definition (no aggregation)."""
    t, alpha, tau = fit_values["abilities"], fit_values["alpha"], math.exp(fit_values["eta"])
    total = 0.0
    for i in range(len(j)):
        if j.auto_tie[i] or j.excluded[i]:
            continue
        x = math.exp(alpha[j.prompt[i]]) * (t[j.system_a[i]] - t[j.system_b[i]])
        if rater_terms and j.rater[i] >= 0:
            pos = {1: 1.0, 0: -1.0, -1: 0.0}[int(j.left_is_a[i])]
            x = x * math.exp(fit_values["omega"][j.rater[i]]) + fit_values["bias"][j.rater[i]] * pos
        p_a = 1 / (1 + math.exp(-(x - tau)))
        p_b = 1 / (1 + math.exp(x + tau))
        total += math.log({1: p_a, -1: p_b, 0: 1 - p_a - p_b}[int(j.outcome[i])])
    prior = -0.5 * (np.delete(t, anchor) ** 2).sum() / priors.sd_ability**2
    prior -= 0.5 * (alpha**2).sum() / priors.sd_log_discrimination**2
    prior -= 0.5 * (fit_values["eta"] - priors.mean_log_tau) ** 2 / priors.sd_log_tau**2
    if rater_terms:
        prior -= 0.5 * (fit_values["bias"][:-1] ** 2).sum() / priors.sd_rater_bias**2
        prior -= 0.5 * (fit_values["omega"][:-1] ** 2).sum() / priors.sd_log_reliability**2
    return total + prior


@pytest.mark.parametrize("rater_terms", [False, True])
def test_objective_matches_per_judgement_likelihood(small, rater_terms):
    fit = fit_pairwise_irt(small, rater_terms=rater_terms)
    rng = np.random.default_rng(0)
    theta = fit.theta + rng.normal(0, 0.3, fit.theta.size)
    value, _ = fit.problem.objective(theta, fit.cells)
    expected = _naive_log_posterior(
        small, fit.problem.unpack(theta), fit.problem.priors, fit.problem.anchor, rater_terms
    )
    assert -value == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("rater_terms", [False, True])
def test_gradient_matches_finite_differences(small, rater_terms):
    fit = fit_pairwise_irt(small, rater_terms=rater_terms)
    rng = np.random.default_rng(1)
    theta = fit.theta + rng.normal(0, 0.3, fit.theta.size)
    _, grad = fit.problem.objective(theta, fit.cells)
    numeric = approx_fprime(theta, lambda x: fit.problem.objective(x, fit.cells)[0], 1e-6)
    assert np.max(np.abs(grad - numeric)) < 1e-4 * max(1.0, np.max(np.abs(grad)))


def test_newton_hessian_matches_finite_differences(small):
    fit = fit_pairwise_irt(small)
    problem, cells = fit.problem, fit.cells
    theta = fit.theta + np.random.default_rng(2).normal(0, 0.2, fit.theta.size)
    s, k = problem.n_systems, problem.n_prompts
    eps = 1e-5
    hessian = np.empty((theta.size, theta.size))
    for i in range(theta.size):
        step = np.zeros(theta.size)
        step[i] = eps
        hessian[:, i] = (problem.objective(theta + step, cells)[1] - problem.objective(theta - step, cells)[1]) / (
            2 * eps
        )
    dense, cross, diag = newton_system(problem, theta, cells)
    u = np.r_[np.arange(s - 1), s - 1 + k]
    a = np.arange(s - 1, s - 1 + k)
    scale = np.abs(hessian).max()
    assert np.abs(hessian[np.ix_(u, u)] - dense).max() < 1e-5 * scale
    assert np.abs(hessian[np.ix_(u, a)] - cross).max() < 1e-5 * scale
    assert np.abs(np.diag(hessian)[a] - diag).max() < 1e-5 * scale
    off_diagonal = hessian[np.ix_(a, a)] - np.diag(np.diag(hessian)[a])
    assert np.abs(off_diagonal).max() < 1e-5 * scale  # the arrow structure the Schur solve relies on


def test_newton_refit_reaches_the_lbfgs_optimum(small):
    fit = fit_pairwise_irt(small)
    problem, cells = fit.problem, fit.cells
    weight = prompt_weights(np.random.default_rng(5), problem.n_prompts)[cells.prompt]
    sample = cells.take(weight > 0, cells.counts * weight[:, None])
    newton, converged = newton_refit(problem, fit.theta, sample)
    lbfgs, _ = problem.solve(fit.theta, sample)
    assert converged
    assert problem.objective(newton, sample)[0] <= problem.objective(lbfgs, sample)[0] + 1e-8
    assert np.abs(problem.unpack(newton)["abilities"] - problem.unpack(lbfgs)["abilities"]).max() < 1e-3


def test_aggregation_keeps_every_judgement(small):
    human = small.subset(~small.auto_tie)
    cells = aggregate(human, rater_terms=False)
    assert cells.counts.sum() == len(human)
    assert len(cells.a) < len(human)
    assert np.all(cells.a < cells.b)
    # Wins of the lower-indexed system, counted straight from the judgements.
    lower_wins = ((human.system_a < human.system_b) & (human.outcome == 1)) | (
        (human.system_a > human.system_b) & (human.outcome == -1)
    )
    assert cells.counts[:, 0].sum() == lower_wins.sum()


def test_orientation_does_not_matter(small):
    """Writing every judgement the other way round (B vs A, outcome negated) gives the same fit."""
    from dataclasses import replace

    flipped = replace(
        small,
        system_a=small.system_b,
        system_b=small.system_a,
        outcome=-small.outcome,
        left_is_a=np.where(small.left_is_a >= 0, 1 - small.left_is_a, -1).astype(np.int8),
    )
    for rater_terms in (False, True):
        a = fit_pairwise_irt(small, rater_terms=rater_terms)
        b = fit_pairwise_irt(flipped, rater_terms=rater_terms)
        assert np.allclose(a.abilities, b.abilities, atol=1e-5)
        assert np.allclose(a.discrimination, b.discrimination, atol=1e-4)


def test_anchor_is_zero_and_choice_only_shifts_abilities(small):
    priors = Priors(sd_ability=1e3)  # a flat ability prior: the anchor then only picks the origin
    first = fit_pairwise_irt(small, anchor="sys001", priors=priors)
    second = fit_pairwise_irt(small, anchor="sys004", priors=priors)
    assert first.anchor == "sys001" and first.abilities[first.systems.index("sys001")] == 0.0
    shift = second.abilities - first.abilities
    assert np.ptp(shift) < 1e-4
    assert shift[0] == pytest.approx(-first.abilities[first.systems.index("sys004")], abs=1e-4)
    assert fit_pairwise_irt(small, baselines=["nope", "sys003"]).anchor == "sys003"
    counts = small.subset(~small.auto_tie).judgements_per_system()
    assert fit_pairwise_irt(small).anchor == small.systems[int(np.argmax(counts))]
    with pytest.raises(InvalidInputError, match="anchor 'nope' is not among the judged systems"):
        fit_pairwise_irt(small, anchor="nope")


def test_auto_ties_and_exclusions_stay_out_of_the_likelihood(small):
    fit = fit_pairwise_irt(small)
    assert fit.n_auto_ties == int(small.auto_tie.sum()) > 0
    assert fit.n_judgements == len(small) - fit.n_auto_ties
    assert fit.tie_rate == pytest.approx((small.outcome == 0).mean())
    assert fit.human_tie_rate < fit.tie_rate
    without_auto = fit_pairwise_irt(small.subset(~small.auto_tie))
    assert np.allclose(fit.abilities, without_auto.abilities, atol=1e-8)
    from dataclasses import replace

    rater0 = small.rater == 0
    flagged = replace(small, excluded=rater0)
    excluded_fit = fit_pairwise_irt(flagged)
    dropped_fit = fit_pairwise_irt(small.subset(~rater0))
    assert excluded_fit.n_excluded == int(rater0.sum())
    assert np.allclose(excluded_fit.abilities, dropped_fit.abilities, atol=1e-8)


def test_fit_is_deterministic_and_signed(small):
    a, b = fit_pairwise_irt(small, seed=4), fit_pairwise_irt(small, seed=4)
    assert np.array_equal(a.abilities, b.abilities) and a.tau == b.tau
    signature = a.signature
    assert signature["model"] == "pairwise-graded-logit-ties" and signature["seed"] == 4
    assert signature["anchor"] == a.anchor and signature["n_judgements"] == a.n_judgements
    assert {"numpy", "scipy", "chateval-hub"} <= set(signature["versions"])
    assert a.converged


def test_disconnected_systems_are_reported():
    records = [
        {"prompt_id": str(k), "system_a": a, "system_b": b, "outcome": o}
        for k in range(5)
        for a, b, o in (("x", "y", "A"), ("x", "y", "tie"), ("u", "v", "B"), ("u", "v", "A"))
    ]
    fit = fit_pairwise_irt(from_records(records), anchor="x")
    assert set(fit.disconnected) == {"u", "v"}


@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_corrections_match_statsmodels(method):
    rng = np.random.default_rng(6)
    p = np.concatenate([rng.uniform(0, 0.05, 12), rng.uniform(0, 1, 30), [0.01, 0.01, 0.5]])
    rng.shuffle(p)
    ours = holm(p) if method == "holm" else benjamini_hochberg(p)
    expected = multipletests(p, method=method)[1]
    assert np.allclose(ours, expected, atol=1e-12)


def test_percentile_p_values_count_draws():
    draws = np.array([[1.0, -1.0], [2.0, -2.0], [-0.5, 0.0], [3.0, -3.0]])
    # column 0: 1 draw <= 0 of 4 -> 2 * (1 + 1) / 5; column 1: all <= 0, one >= 0 -> 2 * (1 + 1) / 5
    assert percentile_p_values(draws).tolist() == pytest.approx([0.8, 0.8])


def test_tiers_start_when_the_top_differs_significantly():
    def pair(a, b, significant):
        return PairComparison(a, b, 1.0, (0.0, 2.0), 0.5, 0.1, 0.1, significant, 0.1)

    comparisons = [pair("a", "b", False), pair("a", "c", True), pair("b", "c", False), pair("c", "d", False)]
    comparisons += [pair("a", "d", True), pair("b", "d", True)]
    assert tiers(["a", "b", "c", "d"], comparisons) == {"a": 1, "b": 1, "c": 2, "d": 2}


def test_rank_intervals_from_draws():
    draws = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 2.0], [0.0, 1.0, -1.0], [0.0, 2.5, 2.6]])
    estimate = np.array([0.0, 1.5, 1.0])
    boot = BootstrapResult(abilities=draws, tau=np.ones(4), seed=0, seconds=0.0, converged=4, estimate=estimate)
    assert boot.ranks().tolist() == [[3, 2, 1], [3, 1, 2], [2, 1, 3], [3, 2, 1]]
    assert boot.rank_intervals(0.5).tolist() == [[2, 3], [1, 2], [1, 3]]
    assert boot.difference_intervals(0.5).shape == (3, 3, 2)


def test_experiment_tests_match_scipy_and_statsmodels():
    records = []
    for i, outcome in enumerate(["A"] * 30 + ["B"] * 14 + ["tie"] * 6):
        records.append({"prompt_id": str(i), "system_a": "x", "system_b": "y", "outcome": outcome, "experiment_id": 1})
    records.append({"prompt_id": "x", "system_a": "y", "system_b": "x", "outcome": "A", "experiment_id": 1})
    records.append({"prompt_id": "z", "system_a": "x", "system_b": "y", "outcome": "tie", "experiment_id": 1,
                    "auto_tie": True})  # fmt: skip
    (test,) = experiment_tests(from_records(records))
    assert (test.wins, test.losses, test.ties, test.auto_ties) == (30, 15, 6, 1)
    assert test.p_value == pytest.approx(binomtest(30, 45).pvalue)
    assert test.win_rate == pytest.approx(30 / 45)
    assert test.wilson == pytest.approx(proportion_confint(30, 45, alpha=0.05, method="wilson"))
    assert test.clopper_pearson == pytest.approx(proportion_confint(30, 45, alpha=0.05, method="beta"))
    assert test.cohens_h == pytest.approx(2 * math.asin(math.sqrt(30 / 45)) - 2 * math.asin(math.sqrt(0.5)))


def test_bootstrap_is_seeded_and_reports_progress(small):
    fit = fit_pairwise_irt(small)
    seen: list[float] = []
    first = bootstrap_fit(fit, n_bootstrap=20, seed=1, progress=seen.append)
    again = bootstrap_fit(fit, n_bootstrap=20, seed=1)
    other = bootstrap_fit(fit, n_bootstrap=20, seed=2)
    assert np.array_equal(first.abilities, again.abilities)
    assert not np.array_equal(first.abilities, other.abilities)
    assert seen[-1] == 1.0 and len(seen) == 20 and first.converged == 20
    anchor = fit.systems.index(fit.anchor)
    assert np.all(first.abilities[:, anchor] == 0)


def test_report_json_is_plain_and_complete(small):
    seen: list[float] = []
    report = fit_report(small, bootstrap=30, seed=2, correction="bh", progress=seen.append)
    document = json.loads(json.dumps(report.to_json(), allow_nan=False))
    signature = document["signature"]
    assert signature["bootstrap"] == 30 and signature["correction"] == "bh" and signature["seed"] == 2
    assert signature["elapsed_seconds"] >= signature["fit_seconds"] > 0
    assert "bootstrap=30" in document["signature_text"]
    systems = document["systems"]
    assert [s["rank"] for s in systems] == list(range(1, len(small.systems) + 1))
    assert all(s["interval"][0] <= s["ability"] <= s["interval"][1] for s in systems)
    assert len(document["pairs"]) == len(systems) * (len(systems) - 1) // 2
    discrimination = [p["discrimination"] for p in document["prompts"]]
    assert discrimination == sorted(discrimination, reverse=True)
    assert document["most_discriminating"][0] == document["prompts"][0]
    assert document["least_discriminating"][0] == document["prompts"][-1]
    assert seen[0] == pytest.approx(0.05) and seen[-1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown correction"):
        fit_report(small, correction="bonferroni")
