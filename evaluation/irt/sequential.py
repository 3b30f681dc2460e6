"""Anytime-valid sequential test for one pairwise comparison: a beta-mixture e-process on wins vs losses.

Let p = P(A wins | the judgement is not a tie). Two one-sided e-processes are run side by side:

    E_A(n) = integral over p' > 1/2 of  (p' / 1/2)^W ((1 - p') / 1/2)^L  Beta(p'; c, c) dp' / P(p' > 1/2)
           = 2^n B(c + W, c + L) / B(c, c) * I_{1/2}^c(c + W, c + L) / (1/2)

with W wins of A, L wins of B, n = W + L, and I^c the upper regularised incomplete beta function; E_B swaps W
and L. For every p' > 1/2 the likelihood ratio is a non-negative supermartingale whenever p <= 1/2 (one step
multiplies it by 2 (p p' + (1 - p)(1 - p')) <= 1), so E_A is one too, and Ville's inequality gives
P(sup_n E_A(n) >= 2 / alpha) <= alpha / 2 under "A is not better". Deciding "A better" when E_A crosses 2/alpha
and "B better" when E_B does therefore keeps the probability of any wrong decision at or below alpha under
optional stopping: the experimenter may look after every judgement or every round, and stop whenever.

Ties are skipped: a tie multiplies neither process, which keeps the supermartingale property whatever the tie
rate. When prompts are chosen adaptively the null is about the prompts actually judged (each step's own
p_t <= 1/2), which is the comparison the experimenter asked for. The mixture weight c (a symmetric Beta(c, c)
prior over p) trades power between large effects (small c) and small ones (large c); c = 1 is uniform.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.special import betainc, betaincc, betaln

Decision = Literal["A", "B"] | None


def _check(alpha: float, prior: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not prior > 0.0:
        raise ValueError(f"the Beta mixture weight must be positive, got {prior}")


def log_evalues(wins: np.ndarray, losses: np.ndarray, *, prior: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Log e-values (for "A better", for "B better") after `wins` A wins and `losses` B wins; arrays broadcast."""
    w = np.asarray(wins, dtype=np.float64)
    n_l = np.asarray(losses, dtype=np.float64)
    a, b = prior + w, prior + n_l
    common = (w + n_l + 1.0) * np.log(2.0) + betaln(a, b) - betaln(prior, prior)
    with np.errstate(divide="ignore"):
        log_e_a = common + np.log(betaincc(a, b, 0.5))
        log_e_b = common + np.log(betainc(a, b, 0.5))
    return log_e_a, log_e_b


def decision_boundary(n_max: int, *, alpha: float = 0.05, prior: float = 1.0) -> np.ndarray:
    """Fewest wins that decide "A better" after n decisive judgements, for n = 0..n_max (n + 1: none do).

    E_A grows with W at fixed n (the likelihood ratio of every p' > 1/2 does), so a binary search per n finds
    the boundary; by symmetry B is decided when the losses reach the same count.
    """
    _check(alpha, prior)
    n = np.arange(n_max + 1)
    lo, hi = np.zeros_like(n), n + 1
    threshold = np.log(2.0 / alpha)
    while np.any(lo < hi):
        mid = np.minimum((lo + hi) // 2, n)
        log_e_a, _ = log_evalues(mid, n - mid, prior=prior)
        active, ok = lo < hi, log_e_a >= threshold
        hi = np.where(active & ok, mid, hi)
        lo = np.where(active & ~ok, mid + 1, lo)
    return lo


def first_decision(
    outcomes: np.ndarray, *, alpha: float = 0.05, prior: float = 1.0, budget: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Run the test over each row of `outcomes` (+1 A better, 0 tie, -1 B better; shape (m, n) or (n,)).

    Returns (decision, used), one entry per row: decision +1 (A better), -1 (B better) or 0 (undecided: the row
    or the budget ran out), and the judgements consumed, ties included (the deciding judgement counts).
    """
    x = np.atleast_2d(np.asarray(outcomes, dtype=np.int8))
    if budget is not None:
        x = x[:, :budget]
    m, n = x.shape
    if n == 0:
        return np.zeros(m, dtype=np.int8), np.zeros(m, dtype=np.int64)
    wins, losses = np.cumsum(x == 1, axis=1), np.cumsum(x == -1, axis=1)
    boundary = decision_boundary(n, alpha=alpha, prior=prior)[wins + losses]
    hit_a, hit_b = wins >= boundary, losses >= boundary
    first_a = np.where(hit_a.any(axis=1), hit_a.argmax(axis=1), n)
    first_b = np.where(hit_b.any(axis=1), hit_b.argmax(axis=1), n)
    first = np.minimum(first_a, first_b)
    decision = np.where(first < n, np.where(first_a <= first_b, 1, -1), 0).astype(np.int8)
    used = np.where(first < n, first + 1, n).astype(np.int64)
    return decision, used


@dataclass
class SequentialTest:
    """One comparison fed judgements one at a time or in rounds; stops at the first crossing or at `budget`.

    `budget` counts judgements, ties included (they cost as much as any other). Outcomes after the stop are
    not consumed, so `used` is what the comparison actually needed.
    """

    alpha: float = 0.05
    prior: float = 1.0
    budget: int | None = None
    wins: int = 0
    losses: int = 0
    ties: int = 0
    decision: Decision = None
    _exhausted: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        _check(self.alpha, self.prior)

    @property
    def used(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def done(self) -> bool:
        return self.decision is not None or self._exhausted

    @property
    def log_evalues(self) -> tuple[float, float]:
        log_e_a, log_e_b = log_evalues(np.array(self.wins), np.array(self.losses), prior=self.prior)
        return float(log_e_a), float(log_e_b)

    def update(self, outcomes: np.ndarray | list[int]) -> int:
        """Feed judgements in order (+1 A better, 0 tie, -1 B better); returns how many were consumed."""
        x = np.asarray(outcomes, dtype=np.int8).ravel()
        if self.done or x.size == 0:
            return 0
        room = x.size if self.budget is None else min(x.size, self.budget - self.used)
        if room <= 0:
            self._exhausted = True
            return 0
        x = x[:room]
        wins = self.wins + np.cumsum(x == 1)
        losses = self.losses + np.cumsum(x == -1)
        log_e_a, log_e_b = log_evalues(wins, losses, prior=self.prior)
        threshold = np.log(2.0 / self.alpha)
        crossed = np.flatnonzero((log_e_a >= threshold) | (log_e_b >= threshold))
        take = int(crossed[0]) + 1 if crossed.size else x.size
        self.wins, self.losses = int(wins[take - 1]), int(losses[take - 1])
        self.ties += int(np.count_nonzero(x[:take] == 0))
        if crossed.size:
            self.decision = "A" if log_e_a[take - 1] >= threshold else "B"
        elif self.budget is not None and self.used >= self.budget:
            self._exhausted = True
        return take
