"""Which prompts to spend judgements on: expected Fisher information about a planned comparison, per prompt.

Under the graded logit with ties (evaluation.irt.model), one judgement of A vs B on prompt k, with gap
d = t_A - t_B and x = a_k d, has outcome probabilities

    P_A = s(x - tau),  P_B = s(-x - tau),  P_T = 1 - P_A - P_B.

The Fisher information about d is I_k(d) = sum over outcomes c of (dP_c/dd)^2 / P_c. Since s' = s (1 - s),

    dP_A/dd = a_k g_A,  dP_B/dd = -a_k g_B,  dP_T/dd = -a_k (g_A - g_B),   with g_A = P_A (1 - P_A), g_B likewise,

so I_k(d) = a_k^2 [ P_A (1 - P_A)^2 + P_B (1 - P_B)^2 + (g_A - g_B)^2 / P_T ].

Without ties (tau = 0) P_B = 1 - P_A, g_A = g_B and the bracket is P_A (1 - P_A): the familiar a_k^2 p (1 - p).
As tau -> 0 the tie term is a 0/0 that tends to 0 (g_A - g_B ~ -2 tau s''(x), P_T ~ 2 tau s'(x)). Information
grows with a_k only while the outcome is still uncertain: at a large gap a very discriminating prompt is
a foregone conclusion (P_A near 1) and tells less than a moderately discriminating one.

The information is evaluated at the fit's point estimates for a typical rater (reliability 1, no position bias).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from evaluation.errors import InvalidInputError
from evaluation.irt.model import IrtFit


@dataclass(frozen=True)
class PromptInformation:
    """One prompt's expected information about the planned comparison, with the outcome probabilities behind it."""

    prompt: str
    index: int  # into fit.prompts
    discrimination: float
    p_a: float
    p_b: float
    p_tie: float
    information: float


def outcome_probabilities(
    discrimination: np.ndarray, gap: float, tau: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P_A, P_B, P_tie) per prompt for one judgement at ability gap t_A - t_B."""
    x = np.asarray(discrimination, dtype=np.float64) * gap
    p_a, p_b = expit(x - tau), expit(-x - tau)
    return p_a, p_b, np.clip(1.0 - p_a - p_b, 0.0, 1.0)


def expected_information(discrimination: np.ndarray, gap: float, tau: float) -> np.ndarray:
    """Fisher information about the gap t_A - t_B carried by one judgement on each prompt (module docstring)."""
    a = np.asarray(discrimination, dtype=np.float64)
    return _information(a, *outcome_probabilities(a, gap, tau))


def _information(a: np.ndarray, p_a: np.ndarray, p_b: np.ndarray, p_t: np.ndarray) -> np.ndarray:
    """expected_information from the discriminations and their outcome_probabilities."""
    g_a, g_b = p_a * (1.0 - p_a), p_b * (1.0 - p_b)
    # P_T underflows only where g_A - g_B does too (tau -> 0); the tie term is 0 in that limit.
    tie_term = np.divide((g_a - g_b) ** 2, p_t, out=np.zeros_like(p_t), where=p_t > 1e-300)
    return a**2 * (p_a * (1.0 - p_a) ** 2 + p_b * (1.0 - p_b) ** 2 + tie_term)


def _system_index(fit: IrtFit, system: str | int) -> int:
    if isinstance(system, int | np.integer):
        if not 0 <= system < len(fit.systems):
            raise InvalidInputError(f"system index {system} is out of range (the fit has {len(fit.systems)})")
        return int(system)
    if system not in fit.systems:
        raise InvalidInputError(f"system {system!r} is not in the fit (systems: {', '.join(fit.systems)})")
    return fit.systems.index(system)


def rank_prompts(
    fit: IrtFit, system_a: str | int, system_b: str | int, *, gap: float | None = None
) -> list[PromptInformation]:
    """All prompts of the fit, most informative first, for comparing system_a with system_b.

    gap defaults to the fit's estimate t_A - t_B; pass one to plan for a difference of a given size.
    """
    a, b = _system_index(fit, system_a), _system_index(fit, system_b)
    if a == b:
        raise InvalidInputError(f"a comparison needs two different systems, got {fit.systems[a]!r} twice")
    d = float(fit.abilities[a] - fit.abilities[b]) if gap is None else float(gap)
    discrimination = np.asarray(fit.discrimination, dtype=np.float64)
    p_a, p_b, p_t = outcome_probabilities(discrimination, d, fit.tau)
    info = _information(discrimination, p_a, p_b, p_t)
    order = np.lexsort((np.arange(len(info)), -info))
    return [
        PromptInformation(
            prompt=fit.prompts[k],
            index=int(k),
            discrimination=float(fit.discrimination[k]),
            p_a=float(p_a[k]),
            p_b=float(p_b[k]),
            p_tie=float(p_t[k]),
            information=float(info[k]),
        )
        for k in order
    ]


def select_prompts(
    fit: IrtFit,
    system_a: str | int,
    system_b: str | int,
    budget: int,
    *,
    exclude: tuple[str, ...] | list[str] | set[str] = (),
    gap: float | None = None,
) -> list[PromptInformation]:
    """The `budget` most informative prompts for the comparison, leaving out those in `exclude`."""
    if budget < 0:
        raise InvalidInputError(f"budget must be at least 0, got {budget}")
    skip = set(exclude)
    ranked = [item for item in rank_prompts(fit, system_a, system_b, gap=gap) if item.prompt not in skip]
    return ranked[:budget]
