"""Quality-check items built automatically for chat: a real response against a degraded copy.

Three degradations, chosen at random per check: the response truncated to its first third, its words shuffled, or
the same system's response to a different prompt. A careful rater prefers the real response; the side it is
shown on is random. Responses too short to degrade visibly (fewer than MIN_WORDS words) are paired with an
off-topic response instead.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

MIN_WORDS = 4
DEGRADATIONS = ("truncated", "shuffled", "other_prompt")


@dataclass(frozen=True)
class Degraded:
    text: str
    how: str


def _truncated(words: list[str]) -> str:
    return " ".join(words[: max(1, len(words) // 3)])


def _shuffled(words: list[str], rng: random.Random) -> str | None:
    for _ in range(10):
        order = words[:]
        rng.shuffle(order)
        if order != words:
            return " ".join(order)
    return None  # all words equal: shuffling cannot change it


def degrade(response: str, others: list[str], rng: random.Random) -> Degraded | None:
    """A visibly worse version of `response`, or None when nothing different can be made.

    `others` are responses of the same system to other prompts (for the off-topic degradation)."""
    words = response.split()
    how = rng.choice(DEGRADATIONS) if len(words) >= MIN_WORDS else "other_prompt"
    if how == "truncated":
        return Degraded(_truncated(words), how)
    if how == "shuffled":
        text = _shuffled(words, rng)
        if text is not None:
            return Degraded(text, how)
    candidates = [o for o in others if o.strip() and o.strip() != response.strip()]
    if not candidates:
        return None
    return Degraded(rng.choice(candidates), "other_prompt")
