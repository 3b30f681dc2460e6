"""Results of one A/B experiment: wins, ties, losses, win rates with Wilson intervals and a sign test."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import binomtest, norm

OUTCOMES = ("A", "tie", "B")
"""The ordered categories of a pairwise judgement; codes 0, 1, 2 in that order (ties in the middle)."""

_CODES: dict[Any, int] = {"A": 0, "tie": 1, "B": 2, 1: 0, 0: 1, -1: 2}
VERSION = "1"

Outcome = str | int


def encode_outcomes(outcomes: Sequence[Outcome] | np.ndarray) -> np.ndarray:
    """Map outcomes to codes 0 (A better), 1 (tie), 2 (B better); shape (n,) int8.

    Accepts "A" / "tie" / "B", or +1 (A better) / 0 (tie) / -1 (B better). Raises ValueError on anything else.
    """
    if isinstance(outcomes, np.ndarray) and outcomes.dtype.kind in "iu":
        bad = ~np.isin(outcomes, (-1, 0, 1))
        if bad.any():
            index = int(np.flatnonzero(bad)[0])
            raise ValueError(f"outcome {outcomes[index]!r} at position {index} is not +1, 0 or -1")
        return (1 - outcomes).astype(np.int8)
    codes = np.empty(len(outcomes), dtype=np.int8)
    for index, outcome in enumerate(outcomes):
        code = _CODES.get(outcome) if not isinstance(outcome, bool) else None
        if code is None:
            raise ValueError(f"outcome {outcome!r} at position {index} is not 'A', 'tie', 'B' (or +1, 0, -1)")
        codes[index] = code
    return codes


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion successes / n; None when n == 0.

    `successes` may be fractional (ties counted as half a win): the formula is used as is.
    """
    if n <= 0:
        return None
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class PairwiseSummary:
    """Wins, ties and losses of system A against system B, and what they say.

    win_rate drops ties (wins / (wins + losses)); win_rate_tie_half counts a tie as half a win over all n.
    p_value is the two-sided exact binomial (sign) test of wins against losses, ties dropped. Judgements are
    treated as independent, which they are not quite (several raters judge each prompt).
    """

    wins: int
    ties: int
    losses: int
    n: int
    win_rate: float | None
    win_rate_ci: tuple[float, float] | None
    win_rate_tie_half: float | None
    win_rate_tie_half_ci: tuple[float, float] | None
    p_value: float | None
    net_win_rate: float | None
    """(wins - losses) / n, in [-1, 1]: the share of judgements won minus the share lost."""
    win_rate_margin: float | None
    """win_rate - 0.5: how far from a coin flip, ties dropped."""
    confidence: float

    @property
    def signature(self) -> str:
        return (
            f"pairwise-results|v{VERSION}|ci=wilson|confidence={self.confidence}|test=binomial-two-sided|ties=dropped"
        )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("win_rate_ci", "win_rate_tie_half_ci"):
            data[key] = list(data[key]) if data[key] is not None else None
        data["signature"] = self.signature
        return data


def summarize(outcomes: Sequence[Outcome] | np.ndarray, *, confidence: float = 0.95) -> PairwiseSummary:
    """Summarise judgements from system A's side; see `encode_outcomes` for the accepted values."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    counts = np.bincount(encode_outcomes(outcomes), minlength=3)
    wins, ties, losses = (int(c) for c in counts)
    n = wins + ties + losses
    decided = wins + losses
    win_rate = wins / decided if decided else None
    return PairwiseSummary(
        wins=wins,
        ties=ties,
        losses=losses,
        n=n,
        win_rate=win_rate,
        win_rate_ci=wilson_interval(wins, decided, confidence),
        win_rate_tie_half=(wins + ties / 2) / n if n else None,
        win_rate_tie_half_ci=wilson_interval(wins + ties / 2, n, confidence),
        p_value=float(binomtest(wins, decided, 0.5, alternative="two-sided").pvalue) if decided else None,
        net_win_rate=(wins - losses) / n if n else None,
        win_rate_margin=win_rate - 0.5 if win_rate is not None else None,
        confidence=confidence,
    )
