"""A judge's answer to a verdict, and the two orders of a pair combined into one verdict.

Position verdicts say which *shown* response won ("A" = shown first); system verdicts say which *system* won
("A" = system_a). An answer whose verdict cannot be read with certainty is `None` (recorded as unparseable, never
guessed): no verdict token, or tokens naming different verdicts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["A", "B", "tie"]
Order = Literal["ab", "ba"]
"""ab: system_a shown first (as Response A); ba: system_b shown first."""
ORDERS: tuple[Order, Order] = ("ab", "ba")

MAX_ANSWER_CHARS = 100_000
"""Longer answers are not searched (a runaway generation is unparseable, not scanned forever)."""

# [[A]], [[ b ]], **[[Tie]]**; and as a fallback a last line "Verdict: A" (markdown emphasis allowed).
_BRACKETED = re.compile(r"\[\[\s*(a|b|tie)\s*\]\]", re.IGNORECASE)
_VERDICT_LINE = re.compile(r"^\W*(?:final\s+)?verdict\W*[:\-]\s*\W*(a|b|tie)\W*$", re.IGNORECASE)
_CANONICAL: dict[str, Verdict] = {"a": "A", "b": "B", "tie": "tie"}
_SWAPPED: dict[Verdict, Verdict] = {"A": "B", "B": "A", "tie": "tie"}


def parse_verdict(answer: str) -> Verdict | None:
    """The position verdict of an answer, or None when it is absent or ambiguous."""
    if len(answer) > MAX_ANSWER_CHARS:
        return None
    found = {_CANONICAL[match.lower()] for match in _BRACKETED.findall(answer)}
    if not found:
        lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
        match = _VERDICT_LINE.match(lines[-1]) if lines else None
        found = {_CANONICAL[match.group(1).lower()]} if match else set()
    return found.pop() if len(found) == 1 else None


def to_system(verdict: Verdict, order: Order) -> Verdict:
    """A position verdict in system terms: in order "ba" the first response shown is system_b's."""
    return verdict if order == "ab" else _SWAPPED[verdict]


@dataclass(frozen=True)
class Combined:
    """Both orders of one pair: `outcome` is None when the pair could not be graded (either order unreadable)."""

    outcome: Verdict | None
    consistent: bool | None
    """True when both orders name the same system verdict; None when ungraded."""


def combine(ab: Verdict | None, ba: Verdict | None) -> Combined:
    """Combine the system verdicts of both orders: equal -> that verdict; different -> tie, counted inconsistent;
    either missing -> ungraded (a single order would carry the position bias the swap is there to cancel)."""
    if ab is None or ba is None:
        return Combined(None, None)
    if ab == ba:
        return Combined(ab, True)
    return Combined("tie", False)
