"""Calibration of the fit's significance under a null that real dialogue data has: two equally good systems whose
prompts each favour one of them (a prompt-level preference, not an ability gap). The pair must not come out
significant much more often than alpha; the exact binomial test on the same judgements is shown alongside."""

from __future__ import annotations

import numpy as np
from scipy.stats import binomtest

from evaluation.irt.bootstrap import bootstrap_fit
from evaluation.irt.model import fit_pairwise_irt
from evaluation.irt.significance import compare_pairs
from evaluation.judgements import from_records

RUNS, PROMPTS, RATERS = 20, 200, 3


def _equal_systems_with_prompt_preferences(rng: np.random.Generator) -> list[dict]:
    """Per prompt, a coin decides which system it favours: P(favoured) 0.55, P(other) 0.25, P(tie) 0.2."""
    rows = []
    for k in range(PROMPTS):
        favours_x = rng.random() < 0.5
        for _ in range(RATERS):
            u = rng.random()
            wins = u < 0.55
            outcome = "tie" if u >= 0.8 else ("A" if wins == favours_x else "B")
            rows.append({"prompt_id": f"p{k}", "system_a": "X", "system_b": "Y", "outcome": outcome})
    return rows


def test_prompt_level_preferences_do_not_make_equal_systems_significantly_different():
    rng = np.random.default_rng(20191)
    irt_rejections = binomial_rejections = 0
    for run in range(RUNS):
        rows = _equal_systems_with_prompt_preferences(rng)
        fit = fit_pairwise_irt(from_records(rows, name="null", qualify_prompts=False))
        (pair,) = compare_pairs(fit, bootstrap_fit(fit, n_bootstrap=100, seed=run))
        irt_rejections += pair.p_value < 0.05
        wins, losses = sum(r["outcome"] == "A" for r in rows), sum(r["outcome"] == "B" for r in rows)
        binomial_rejections += binomtest(wins, wins + losses).pvalue < 0.05
    # 5% of 20 runs is 1; allow sampling noise (P(Binomial(20, 0.05) > 3) < 2%), and never worse than the
    # binomial test, which ignores that a prompt's three judgements are correlated.
    assert irt_rejections <= 3
    assert irt_rejections <= max(binomial_rejections, 3)
