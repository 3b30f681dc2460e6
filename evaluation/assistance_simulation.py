"""Simulated assistance studies with known truth, for the tests and scripts/bench_assistance_effect.py.

Participants are randomised (permuted blocks, `evaluation.randomisation`) into arms and each annotates a random
subset of a shared pool of items (one categorical question with `categories` answers; each item has one correct
answer and a judge suggestion that is correct with probability `suggestion_accuracy`, otherwise a uniformly drawn
wrong answer). A participant's answers are correct with probability p ~ Beta around `skill` (a wrong answer is
uniform over the wrong ones); realtime participants have p + `realtime_skill_shift`; an assisted participant copies
the (shown) suggestion with probability `reliance`, else answers on their own. Log handling time = base +
participant effect + item effect + arm effect + noise. `truth` gives each effect's exact expectation.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.randomisation import assign_arm


@dataclass(frozen=True)
class Scenario:
    arms: tuple[str, ...] = ("unassisted", "assisted", "realtime")
    participants: int = 24
    items: int = 60
    items_per_participant: int = 20
    categories: int = 3
    base_log_seconds: float = math.log(25.0)
    participant_sd: float = 0.35
    item_sd: float = 0.25
    noise_sd: float = 0.5
    assisted_log_effect: float = math.log(0.88)  # MILO: 12% less handling time
    realtime_log_effect: float = math.log(1.234)  # MILO: 23.4% more
    skill: float = 0.75
    skill_concentration: float = 20.0
    realtime_skill_shift: float = 0.05
    suggestion_accuracy: float = 0.8
    reliance: float = 0.3
    randomise: str = "participant"  # or "conversation": every participant works in every arm
    conversations_per_participant: int = 3

    def null(self) -> Scenario:
        """The same study with no effect of assistance at all."""
        from dataclasses import replace

        return replace(self, assisted_log_effect=0.0, realtime_log_effect=0.0, realtime_skill_shift=0.0, reliance=0.0)


def truth(s: Scenario) -> dict[str, dict[str, float]]:
    """Expected effect (arm - unassisted) on log time, agreement with unassisted others and equality with the
    suggestion, per arm."""
    k1 = s.categories - 1
    p = s.skill

    def agree(q: float) -> float:  # a random unassisted other is right with probability p
        return q * p + (1 - q) * (1 - p) / k1

    def match(q: float) -> float:  # an own answer equals the suggestion
        a = s.suggestion_accuracy
        return q * a + (1 - q) * (1 - a) / k1

    q_assisted = s.reliance * s.suggestion_accuracy + (1 - s.reliance) * p
    q_realtime = p + s.realtime_skill_shift
    return {
        "assisted": {
            "log_time": s.assisted_log_effect,
            "agreement": agree(q_assisted) - agree(p),
            "equals_suggestion": s.reliance + (1 - s.reliance) * match(p) - match(p),
        },
        "realtime": {
            "log_time": s.realtime_log_effect,
            "agreement": agree(q_realtime) - agree(p),
            "equals_suggestion": match(q_realtime) - match(p),
        },
    }


def _units(rng: np.random.Generator, s: Scenario) -> list[tuple[int, int, str]]:
    """(participant, conversation, arm) for every unit of work."""
    seed = int(rng.integers(0, 2**62))
    if s.randomise == "participant":
        return [(p, p, assign_arm(seed, p, s.arms)) for p in range(s.participants)]
    units, position = [], 0
    for p in range(s.participants):
        for c in range(s.conversations_per_participant):
            units.append((p, p * s.conversations_per_participant + c, assign_arm(seed, position, s.arms)))
            position += 1
    return units


def simulate(rng: np.random.Generator, s: Scenario) -> dict[str, Any]:
    """One data set: aligned lists, one entry per annotation, as `assistance_effects` takes them."""
    k = s.categories
    correct = rng.integers(0, k, s.items)
    right = rng.random(s.items) < s.suggestion_accuracy
    suggestion = np.where(right, correct, (correct + rng.integers(1, k, s.items)) % k)
    item_time = rng.normal(0, s.item_sd, s.items)
    a, b = s.skill * s.skill_concentration, (1 - s.skill) * s.skill_concentration
    skill = rng.beta(a, b, s.participants)
    person_time = rng.normal(0, s.participant_sd, s.participants)
    effect = {"unassisted": 0.0, "assisted": s.assisted_log_effect, "realtime": s.realtime_log_effect}
    units = _units(rng, s)
    per_unit = max(
        1, s.items_per_participant // (1 if s.randomise == "participant" else s.conversations_per_participant)
    )
    out: dict[str, list] = {k_: [] for k_ in ("participants", "conversations", "arms", "items", "answers")}
    out.update(suggestions=[], handling_ms=[], categorical=[])
    # a participant never meets an item twice, even across their conversations (the hub's messages are unique)
    owned = Counter(u[0] for u in units)
    picks = {p: rng.choice(s.items, per_unit * count, replace=False) for p, count in owned.items()}
    seen: dict[int, int] = {}
    for participant, conversation, arm in units:
        start = seen.get(participant, 0)
        seen[participant] = start + per_unit
        chosen = picks[participant][start : start + per_unit]
        q = np.clip(skill[participant] + (s.realtime_skill_shift if arm == "realtime" else 0.0), 0, 1)
        own = np.where(rng.random(per_unit) < q, correct[chosen], (correct[chosen] + rng.integers(1, k, per_unit)) % k)
        if arm == "assisted":
            own = np.where(rng.random(per_unit) < s.reliance, suggestion[chosen], own)
        log_s = (
            s.base_log_seconds
            + person_time[participant]
            + item_time[chosen]
            + effect[arm]
            + rng.normal(0, s.noise_sd, per_unit)
        )
        out["participants"] += [participant] * per_unit
        out["conversations"] += [conversation] * per_unit
        out["arms"] += [arm] * per_unit
        out["items"] += chosen.tolist()
        out["answers"] += own.tolist()
        out["suggestions"] += suggestion[chosen].tolist()
        out["handling_ms"] += (np.exp(log_s) * 1000).tolist()
        out["categorical"] += [True] * per_unit
    if s.randomise == "participant":
        out.pop("conversations")
    return out
