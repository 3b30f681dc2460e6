"""Per-rater quality of pairwise judgements and the screening rule that flags raters to review.

Input rows are `RatingRow`s (the hub builds them from its tables, analysis scripts from the ratings export).
`item` is what was judged: in an experiment the prompt id, so that a "repeat" row carries the same item as the
"pair" row it repeats. Only "pair" rows are judgements of the two systems; "attention" and "known_answer" rows
(with `expected`) are checks, "repeat" rows measure self-consistency. Rows without a rater (automatic ties) are
ignored. A rater's judgements of an item count once for agreement (the first in input order); later ones
are compared with it for self-consistency.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import binomtest

from evaluation.pairwise_results import OUTCOMES

KINDS = ("pair", "attention", "repeat", "known_answer")
CHECK_KINDS = ("attention", "known_answer")
JUDGEMENT_KINDS = ("pair", "repeat")
CHOICES = ("left", "right", "tie")
_TIE_CHOICES = {"tie": "tie", "both_good": "tie", "both_bad": "tie", "left": "left", "right": "right"}


@dataclass(frozen=True)
class RatingRow:
    """One judgement. outcome is "A" / "B" / "tie" (both_good / both_bad count as tie); left is "A" or "B"."""

    item: Hashable
    rater: Hashable | None
    outcome: str
    kind: str = "pair"
    choice: str | None = None
    left: str | None = None
    expected: str | None = None
    task: Hashable | None = None
    seconds_on_task: float | None = None
    excluded: bool = False

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.choice is not None and self.choice not in _TIE_CHOICES:
            raise ValueError(f"choice must be one of {sorted(_TIE_CHOICES)} or None, got {self.choice!r}")
        if self.left not in (None, "A", "B"):
            raise ValueError(f"left must be 'A', 'B' or None, got {self.left!r}")

    @property
    def side(self) -> str | None:
        """The side clicked, "left", "right" or "tie"; None when neither the choice nor the left system is known."""
        if self.choice is not None:
            return _TIE_CHOICES[self.choice]
        if self.left is None:
            return None
        if self.outcome == "tie":
            return "tie"
        return "left" if self.outcome == self.left else "right"


@dataclass(frozen=True)
class ScreeningThresholds:
    """When a rater is flagged. Each rule needs a minimum of evidence before it fires.

    - agreement with unanimous co-raters (two or more other raters of the item, all giving the same outcome)
      below `min_unanimous_agreement` over at least `min_unanimous_items` such items (a random clicker agrees
      1/3 of the time; the real ChatEval crowd agreed 63% of the time, pooled);
    - attention / known-answer accuracy not significantly above `chance` (one-sided binomial test at `alpha`)
      with at least `min_attention_checks` checks;
    - self-consistency on repeated items not significantly above `chance` with at least `min_repeats` repeats;
    - one choice (left, right or tie) in at least `max_choice_share` of at least `min_choice_judgements`
      judgements (always-left clickers; always-tie counts too, read from the outcome when the side is unknown);
    - median seconds per judgement below `min_median_seconds` over at least `min_timed_judgements` judgements.
    """

    min_unanimous_agreement: float = 0.4
    min_unanimous_items: int = 10
    min_unanimous_coraters: int = 2
    chance: float = 1 / 3
    alpha: float = 0.05
    min_attention_checks: int = 5
    min_repeats: int = 10
    max_choice_share: float = 0.9
    min_choice_judgements: int = 10
    min_median_seconds: float = 2.0
    min_timed_judgements: int = 10


FLAG_CODES = ("unanimous_disagreement", "attention", "self_consistency", "choice_bias", "too_fast")


@dataclass
class RaterQuality:
    """Quality figures of one rater; None where there is nothing to measure."""

    rater: Hashable
    n_judgements: int
    """"pair" judgements (repeats of an item included)."""
    excluded: bool
    """Every row of this rater carries the exclusion flag."""
    majority_items: int = 0
    majority_agreement: float | None = None
    """Share of the rater's items where they gave the strict majority outcome of the other raters."""
    unanimous_items: int = 0
    unanimous_disagreements: int = 0
    unanimous_agreement: float | None = None
    attention_checks: int = 0
    attention_correct: int = 0
    attention_accuracy: float | None = None
    attention_p_value: float | None = None
    """One-sided binomial test of the accuracy against chance."""
    repeats: int = 0
    repeats_consistent: int = 0
    self_consistency: float | None = None
    self_consistency_p_value: float | None = None
    timed_tasks: int = 0
    median_seconds_per_judgement: float | None = None
    known_choices: int = 0
    choice_shares: dict[str, float] | None = None
    """Share of left / right / tie clicks among judgements whose side is known."""
    outcome_shares: dict[str, float] | None = None
    """Share of A / tie / B among the rater's judgements."""
    flags: list[str] = field(default_factory=list)
    """Human-readable reasons, one per rule that fired."""
    flag_codes: list[str] = field(default_factory=list)
    """Machine-readable rule names from FLAG_CODES, aligned with `flags`."""

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _shares(counter: Counter[str], keys: Sequence[str]) -> dict[str, float] | None:
    total = sum(counter[k] for k in keys)
    return {k: counter[k] / total for k in keys} if total else None


def _greater_than_chance(successes: int, n: int, chance: float) -> float:
    return float(binomtest(successes, n, chance, alternative="greater").pvalue)


def _coraters(rows: Sequence[RatingRow]) -> dict[Hashable, dict[Hashable, str]]:
    """item -> rater -> first outcome, over "pair" rows of raters whose rows are not excluded."""
    by_item: dict[Hashable, dict[Hashable, str]] = defaultdict(dict)
    for row in rows:
        if row.kind == "pair" and row.rater is not None and not row.excluded:
            by_item[row.item].setdefault(row.rater, row.outcome)
    return by_item


def _agreement_figures(
    quality: RaterQuality, own: dict[Hashable, str], by_item: dict[Hashable, dict[Hashable, str]], minimum: int
) -> None:
    majority_hits = unanimous_misses = 0
    for item, outcome in own.items():
        others = [o for r, o in by_item.get(item, {}).items() if r != quality.rater]
        if not others:
            continue
        top, top_count = Counter(others).most_common(1)[0]
        if top_count * 2 > len(others):
            quality.majority_items += 1
            majority_hits += outcome == top
        if len(others) >= minimum and top_count == len(others):
            quality.unanimous_items += 1
            unanimous_misses += outcome != top
    quality.unanimous_disagreements = unanimous_misses
    if quality.majority_items:
        quality.majority_agreement = majority_hits / quality.majority_items
    if quality.unanimous_items:
        quality.unanimous_agreement = 1 - unanimous_misses / quality.unanimous_items


def _measure(rater: Hashable, rows: list[RatingRow], by_item: dict, thresholds: ScreeningThresholds) -> RaterQuality:
    pairs = [r for r in rows if r.kind == "pair"]
    quality = RaterQuality(rater=rater, n_judgements=len(pairs), excluded=all(r.excluded for r in rows))
    own: dict[Hashable, str] = {}
    for row in pairs:
        own.setdefault(row.item, row.outcome)
    _agreement_figures(quality, own, by_item, thresholds.min_unanimous_coraters)

    checks = [r for r in rows if r.kind in CHECK_KINDS and r.expected is not None]
    quality.attention_checks = len(checks)
    quality.attention_correct = sum(r.outcome == r.expected for r in checks)
    if checks:
        quality.attention_accuracy = quality.attention_correct / len(checks)
        quality.attention_p_value = _greater_than_chance(quality.attention_correct, len(checks), thresholds.chance)

    judged = [r for r in rows if r.kind in JUDGEMENT_KINDS]
    first: dict[Hashable, str] = {}
    for row in judged:
        if row.item in first:
            quality.repeats += 1
            quality.repeats_consistent += row.outcome == first[row.item]
        else:
            first[row.item] = row.outcome
    if quality.repeats:
        quality.self_consistency = quality.repeats_consistent / quality.repeats
        quality.self_consistency_p_value = _greater_than_chance(
            quality.repeats_consistent, quality.repeats, thresholds.chance
        )

    sides = Counter(s for s in (r.side for r in judged) if s is not None)
    quality.known_choices = sum(sides.values())
    quality.choice_shares = _shares(sides, CHOICES)
    quality.outcome_shares = _shares(Counter(r.outcome for r in judged), OUTCOMES)

    per_task: dict[Hashable, list[RatingRow]] = defaultdict(list)
    for row in rows:
        if row.task is not None:
            per_task[row.task].append(row)
    seconds = []
    for task_rows in per_task.values():
        timed = [r.seconds_on_task for r in task_rows if r.seconds_on_task is not None]
        if timed:
            seconds.append((timed[0] / len(task_rows), len(task_rows)))
    quality.timed_tasks = len(seconds)
    if seconds:
        quality.median_seconds_per_judgement = float(statistics.median(s for s, _ in seconds))
    _flag(quality, thresholds, timed_judgements=sum(n for _, n in seconds), judged=len(judged))
    return quality


def _flag(quality: RaterQuality, t: ScreeningThresholds, *, timed_judgements: int, judged: int) -> None:
    def add(code: str, reason: str) -> None:
        quality.flag_codes.append(code)
        quality.flags.append(reason)

    if (
        quality.unanimous_agreement is not None
        and quality.unanimous_items >= t.min_unanimous_items
        and quality.unanimous_agreement < t.min_unanimous_agreement
    ):
        add(
            "unanimous_disagreement",
            f"disagrees with unanimous co-raters on {quality.unanimous_disagreements} of {quality.unanimous_items} "
            f"items (agreement {quality.unanimous_agreement:.0%}, threshold {t.min_unanimous_agreement:.0%})",
        )
    attention_p = quality.attention_p_value  # None only without checks; 0.0 is a real (tiny) p-value
    if quality.attention_checks >= t.min_attention_checks and attention_p is not None and attention_p >= t.alpha:
        add(
            "attention",
            f"attention checks {quality.attention_correct} of {quality.attention_checks} correct, not above chance "
            f"{t.chance:.2f} (one-sided p = {attention_p:.3g})",
        )
    consistency_p = quality.self_consistency_p_value
    if quality.repeats >= t.min_repeats and consistency_p is not None and consistency_p >= t.alpha:
        add(
            "self_consistency",
            f"repeated judgements consistent {quality.repeats_consistent} of {quality.repeats} times, not above "
            f"chance {t.chance:.2f} (one-sided p = {consistency_p:.3g})",
        )
    biased = _choice_bias(quality, t, judged)
    if biased:
        add("choice_bias", biased)
    median = quality.median_seconds_per_judgement
    if median is not None and timed_judgements >= t.min_timed_judgements and median < t.min_median_seconds:
        add(
            "too_fast",
            f"median {median:.1f} s per judgement over {quality.timed_tasks} tasks "
            f"(threshold {t.min_median_seconds} s)",
        )


def _choice_bias(quality: RaterQuality, t: ScreeningThresholds, judged: int) -> str | None:
    if quality.choice_shares and quality.known_choices >= t.min_choice_judgements:
        choice, share = max(quality.choice_shares.items(), key=lambda kv: kv[1])
        if share >= t.max_choice_share:
            return f"chose {choice} in {share:.0%} of {quality.known_choices} judgements"
    if quality.outcome_shares and judged >= t.min_choice_judgements:
        share = quality.outcome_shares["tie"]
        if share >= t.max_choice_share:
            return f"chose tie in {share:.0%} of {judged} judgements"
    return None


def screen(ratings: Iterable[RatingRow], thresholds: ScreeningThresholds | None = None) -> list[RaterQuality]:
    """Quality figures and flags for every rater in `ratings`, in order of first appearance.

    Co-raters are the other raters' first "pair" judgements of the same item; rows already excluded do not
    count as co-raters (so an excluded rater cannot drag others down), but an excluded rater is still measured.
    """
    thresholds = thresholds or ScreeningThresholds()
    rows = list(ratings)
    by_rater: dict[Hashable, list[RatingRow]] = defaultdict(list)
    for row in rows:
        if row.rater is not None:
            by_rater[row.rater].append(row)
    by_item = _coraters(rows)
    return [_measure(rater, rater_rows, by_item, thresholds) for rater, rater_rows in by_rater.items()]


BURST_FLAG_ABOVE = 3  # more raters than this created from one client within a minute of each other: flagged
BURST_FLAG_CODE = "client_burst"  # the flag code, and the screening row's key holding the count


def with_client_bursts(screening: list[dict[str, Any]], bursts: Mapping[Hashable, int]) -> list[dict[str, Any]]:
    """Screening rows (RaterQuality dicts) with `client_burst`: how many raters the rater's client created within a
    minute of it (1 when not known), flagged above BURST_FLAG_ABOVE. Only the hub can count bursts (it alone knows the
    clients), and only its admins see them: the count links raters from one client, so no public view or download
    carries it and the flag cannot be recomputed from the ratings download."""
    for quality in screening:
        burst = quality[BURST_FLAG_CODE] = bursts.get(quality["rater"], 1)
        if burst > BURST_FLAG_ABOVE:
            quality["flags"].append(f"one of {burst} raters created from one client within a minute")
            quality["flag_codes"].append(BURST_FLAG_CODE)
    return screening
