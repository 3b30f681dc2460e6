"""Effect of LLM assistance on annotation (MILO): handling time, agreement with other participants, over-reliance.

Arms: "unassisted" (the judge's suggestion is computed and logged but not shown), "assisted" (pre-annotation
shown), "realtime" (a draft assistant for free text and post-edits). Participants (or conversations) are
randomised, so annotations of one unit are not independent: every estimate works on unit means.

- Randomised by participant (`pairs=None`): each participant's mean outcome; the effect is the difference of the
  arms' means of participant means, with Welch's t interval (Satterthwaite df). A participant found in two arms is
  refused.
- Randomised by conversation (`pairs=` participant per annotation): each conversation's mean, then each
  participant's mean per arm; the effect is the mean over participants who worked in both arms of their within-
  participant difference, with the one-sample t interval (MILO's paired t-test, pairing by annotator instead of
  by job, since the annotator is what was randomised around).

Each effect has a two-sided interval at `level` and a one-sided test in the direction the hypothesis names
(assistance makes annotation faster: "less"; assisted answers equal the suggestion more often: "greater"), as MILO
reported a one-sided paired t-test with a two-sided 95% interval. Fewer than MIN_UNITS units per arm (or pairs)
give no estimate and say why in `note`. Arrays are flat and aligned: one entry per annotation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from evaluation.assistance_outcomes import (
    agreement_from_codes,
    canonical_answer,
    equals_suggestion,
    factorize,
    log_times,
)
from evaluation.errors import InvalidInputError

VERSION = "1"
ARMS = ("unassisted", "assisted", "realtime")
MIN_UNITS = 2
Alternative = Literal["less", "greater"]


@dataclass(frozen=True)
class Effect:
    """treatment - control on one outcome. Interval fields are None when there is no estimate (see `note`)."""

    outcome: str
    treatment: str
    control: str
    alternative: Alternative
    level: float
    design: str  # "participants" (Welch on unit means) or "paired" (within-participant differences)
    units_treatment: int
    units_control: int
    annotations_treatment: int
    annotations_control: int
    mean_treatment: float | None = None
    mean_control: float | None = None
    estimate: float | None = None
    se: float | None = None
    df: float | None = None
    low: float | None = None
    high: float | None = None
    one_sided_bound: float | None = None  # upper bound for "less", lower bound for "greater"
    p_one_sided: float | None = None
    p_two_sided: float | None = None
    note: str | None = None

    @property
    def estimated(self) -> bool:
        return self.estimate is not None

    def covers(self, value: float) -> bool:
        return self.low is not None and self.high is not None and self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_float_array(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise InvalidInputError(f"{name} must be a flat sequence of numbers")
    return array


def _group_means(codes: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(codes, minlength=size)
    sums = np.bincount(codes, weights=values, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts, counts


def _t_summary(estimate: float, se: float, df: float, alternative: Alternative, level: float) -> dict[str, Any]:
    half = stats.t.ppf(0.5 + level / 2, df) * se
    one = stats.t.ppf(level, df) * se
    if se > 0:
        t = estimate / se
        p_one = float(stats.t.cdf(t, df) if alternative == "less" else stats.t.sf(t, df))
        p_two = float(2 * stats.t.sf(abs(t), df))
    else:  # every unit identical: the difference is exact
        p_one = float(0.0 if (estimate < 0 if alternative == "less" else estimate > 0) else 1.0)
        p_two = float(0.0 if estimate != 0 else 1.0)
    return {
        "estimate": float(estimate),
        "se": float(se),
        "df": float(df),
        "low": float(estimate - half),
        "high": float(estimate + half),
        "one_sided_bound": float(estimate + one if alternative == "less" else estimate - one),
        "p_one_sided": p_one,
        "p_two_sided": p_two,
    }


def cluster_effect(
    values: Sequence[float] | np.ndarray,
    units: Sequence[Hashable],
    arms: Sequence[str],
    *,
    treatment: str,
    control: str,
    alternative: Alternative,
    outcome: str,
    pairs: Sequence[Hashable] | None = None,
    level: float = 0.95,
    min_units: int = MIN_UNITS,
) -> Effect:
    """Effect of `treatment` vs `control` on `values` (one per annotation; NaN entries are left out), clustered by
    `units` (the randomised unit of each annotation: participant, or conversation with `pairs` = participant)."""
    y = _as_float_array(values, "values")
    if not (len(units) == len(arms) == len(y)) or (pairs is not None and len(pairs) != len(y)):
        raise InvalidInputError("values, units, arms (and pairs) must be aligned: one entry per annotation")
    if not 0.5 < level < 1:
        raise InvalidInputError("level must be between 0.5 and 1")
    arm = np.asarray(arms, dtype=object)
    keep = np.isfinite(y) & ((arm == treatment) | (arm == control))
    y, arm = y[keep], arm[keep]
    is_t = (arm == treatment).astype(np.int64)
    unit_array = units if isinstance(units, np.ndarray) else np.asarray(units, dtype=object)
    unit_codes, unit_keys = factorize(unit_array[keep])
    base: dict[str, Any] = {
        "outcome": outcome,
        "treatment": treatment,
        "control": control,
        "alternative": alternative,
        "level": level,
        "annotations_treatment": int(is_t.sum()),
        "annotations_control": int(len(y) - is_t.sum()),
    }
    treated = np.bincount(unit_codes, weights=is_t, minlength=len(unit_keys))
    if np.any((treated > 0) & (treated < np.bincount(unit_codes, minlength=len(unit_keys)))):
        raise InvalidInputError("a randomised unit has annotations in two arms (randomised by conversation? pair them)")
    unit_arm = (treated > 0).astype(np.int64)
    unit_means, _ = _group_means(unit_codes, y, len(unit_keys))
    if pairs is None:
        return _welch(unit_means, unit_arm, base, level, min_units)
    pair_of_unit = np.empty(len(unit_keys), dtype=object)
    pair_of_unit[unit_codes] = np.asarray(pairs, dtype=object)[keep]
    return _paired(unit_means, unit_arm, pair_of_unit, base, level, min_units)


def _welch(unit_means: np.ndarray, unit_arm: np.ndarray, base: dict[str, Any], level: float, least: int) -> Effect:
    a, b = unit_means[unit_arm == 1], unit_means[unit_arm == 0]
    counts: dict[str, Any] = {"units_treatment": len(a), "units_control": len(b), "design": "participants"}
    if len(a) < least or len(b) < least:
        note = (
            f"too few participants to estimate: {len(a)} in {base['treatment']} and {len(b)} in {base['control']} "
            f"with annotations (at least {least} in each needed)"
        )
        return Effect(**base, **counts, note=note)
    if len(a) < 2 or len(b) < 2:  # a jackknife replicate: the point estimate alone
        return Effect(**base, **counts, estimate=float(a.mean() - b.mean()), note="no interval from one unit")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2.0
    summary = _t_summary(float(a.mean() - b.mean()), se, df, base["alternative"], level)
    return Effect(**base, **counts, mean_treatment=float(a.mean()), mean_control=float(b.mean()), **summary)


def _paired(
    unit_means: np.ndarray,
    unit_arm: np.ndarray,
    pair_of_unit: np.ndarray,
    base: dict[str, Any],
    level: float,
    least: int,
) -> Effect:
    pair_codes, pair_keys = factorize(list(pair_of_unit))
    n = len(pair_keys)
    means = {}
    for side in (1, 0):
        chosen = unit_arm == side
        means[side], _ = _group_means(pair_codes[chosen], unit_means[chosen], n)
    both = np.isfinite(means[1]) & np.isfinite(means[0])
    counts: dict[str, Any] = {"units_treatment": int(both.sum()), "units_control": int(both.sum()), "design": "paired"}
    if both.sum() < least:
        note = (
            f"too few participants to estimate: {int(both.sum())} worked in both {base['treatment']} and "
            f"{base['control']} conversations (at least {least} needed)"
        )
        return Effect(**base, **counts, note=note)
    diff = means[1][both] - means[0][both]
    if len(diff) < 2:  # a jackknife replicate: the point estimate alone
        return Effect(**base, **counts, estimate=float(diff.mean()), note="no interval from one unit")
    se = float(diff.std(ddof=1) / math.sqrt(len(diff)))
    summary = _t_summary(float(diff.mean()), se, float(len(diff) - 1), base["alternative"], level)
    return Effect(
        **base,
        **counts,
        mean_treatment=float(means[1][both].mean()),
        mean_control=float(means[0][both].mean()),
        **summary,
    )


def agreement_effect(
    *,
    items: Sequence[Hashable],
    answers: Sequence[Any],
    categorical: np.ndarray,
    participants: Sequence[Hashable],
    units: Sequence[Hashable],
    arms: Sequence[str],
    treatment: str,
    pairs: Sequence[Hashable] | None,
    level: float = 0.95,
) -> Effect:
    """Effect on agreement with the unassisted participants (`agreement_with_others`), unit means as in
    `cluster_effect`, but with its standard error from the delete-one-participant jackknife, recomputing every
    agreement without that participant: an annotation's agreement depends on other participants' answers, so unit
    means are not independent and Welch's interval is too narrow (about 91% coverage at 95% in the simulation of
    scripts/bench_assistance_effect.py). The jackknife errs the other way (about 98-99%, as the delete-one jackknife
    of a U-statistic does): a conservative interval and test, which the report says."""
    arm = np.asarray(arms, dtype=object)
    cat = np.asarray(categorical, dtype=bool)
    # integer codes once: the jackknife refits the whole thing once per participant
    unit_array = factorize(units)[0]
    pair_array = None if pairs is None else factorize(pairs)[0]
    item_array = factorize(items)[0]
    answer_array = factorize([canonical_answer(a) for a in answers])[0]
    reference = (arm == "unassisted") & cat
    outcome = "agreement with unassisted participants"

    def fit(rows: np.ndarray, least: int) -> Effect:
        agreement = agreement_from_codes(item_array[rows], answer_array[rows], reference[rows])
        agreement[~cat[rows]] = np.nan
        return cluster_effect(
            agreement,
            unit_array[rows],
            arm[rows],
            treatment=treatment,
            control="unassisted",
            alternative="greater",
            outcome=outcome,
            pairs=None if pair_array is None else pair_array[rows],
            level=level,
            min_units=least,
        )

    full = fit(np.ones(len(arm), dtype=bool), MIN_UNITS)
    if not full.estimated:
        return full
    person, _ = factorize(participants)
    involved = np.unique(person[(arm == treatment) | (arm == "unassisted")])
    replicates = []
    for dropped in involved:
        replicate = fit(person != dropped, 1)
        if replicate.estimate is not None:
            replicates.append(replicate.estimate)
    n = len(replicates)
    if n < len(involved) or n < 3:
        return full  # a replicate lost an arm: keep the unit-mean interval
    theta = np.asarray(replicates)
    se = math.sqrt((n - 1) / n * float(((theta - theta.mean()) ** 2).sum()))
    df = float(n - 1 if pairs is not None else n - 2)
    summary = _t_summary(float(full.estimate), se, df, "greater", level)  # type: ignore[arg-type]
    return dataclasses.replace(full, **summary)


def mean_interval(values: Sequence[float], units: Sequence[Hashable], level: float = 0.95) -> dict[str, Any]:
    """Mean of unit means (e.g. each participant's mean kept fraction of drafts) with its t interval."""
    y = _as_float_array(values, "values")
    if len(units) != len(y):
        raise InvalidInputError("values and units must be aligned")
    keep = np.isfinite(y)
    codes, keys = factorize([u for u, k in zip(units, keep, strict=True) if k])
    means, _ = _group_means(codes, y[keep], len(keys))
    result: dict[str, Any] = {"units": len(keys), "count": int(keep.sum()), "mean": None, "low": None, "high": None}
    if len(keys) == 0:
        result["note"] = "no values yet"
        return result
    result["mean"] = float(means.mean())
    if len(keys) < MIN_UNITS:
        result["note"] = f"too few participants for an interval: {len(keys)} (at least {MIN_UNITS} needed)"
        return result
    half = stats.t.ppf(0.5 + level / 2, len(keys) - 1) * means.std(ddof=1) / math.sqrt(len(keys))
    result["low"], result["high"] = float(means.mean() - half), float(means.mean() + half)
    return result


def assistance_effects(
    *,
    participants: Sequence[Hashable],
    arms: Sequence[str],
    items: Sequence[Hashable],
    answers: Sequence[Any],
    suggestions: Sequence[Any],
    handling_ms: Sequence[float | None],
    categorical: Sequence[bool],
    conversations: Sequence[Hashable] | None = None,
    level: float = 0.95,
) -> dict[str, Any]:
    """Every effect the dashboard reports, per arm against "unassisted". One entry per annotation: its participant,
    arm, item (message and question), answer, the judge's logged suggestion (None if none), handling time and
    whether the question has categories (free-text answers take no part in agreement or over-reliance).
    `conversations` given: randomised by conversation, analysed as within-participant (paired) differences."""
    n = len(arms)
    if not all(len(x) == n for x in (participants, items, answers, suggestions, handling_ms, categorical)):
        raise InvalidInputError("the annotation fields must be aligned: one entry per annotation")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise InvalidInputError(f"unknown arm(s) {', '.join(map(str, unknown))}; arms are {', '.join(ARMS)}")
    units: Sequence[Hashable] = participants if conversations is None else conversations
    pairs = None if conversations is None else participants
    cat = np.asarray(categorical, dtype=bool)
    log_t = log_times(handling_ms)
    seconds = np.exp(log_t)
    matches = equals_suggestion(answers, suggestions)
    matches[~cat] = np.nan
    report: dict[str, Any] = {"version": VERSION, "level": level, "design": "paired" if pairs else "participants"}
    for treatment in ("assisted", "realtime"):

        def effect(values: np.ndarray, alternative: Alternative, outcome: str, arm: str = treatment) -> Effect:
            return cluster_effect(
                values,
                units,
                arms,
                treatment=arm,
                control="unassisted",
                alternative=alternative,
                outcome=outcome,
                pairs=pairs,
                level=level,
            )

        effects = {
            "log_time": effect(log_t, "less", "log handling time"),
            "seconds": effect(seconds, "less", "handling time (s)"),
            "agreement": agreement_effect(
                items=items,
                answers=answers,
                categorical=cat,
                participants=participants,
                units=units,
                arms=arms,
                treatment=treatment,
                pairs=pairs,
                level=level,
            ),
            "equals_suggestion": effect(matches, "greater", "answers equal to the suggestion"),
        }
        report[treatment] = {name: effect.to_dict() for name, effect in effects.items()}
        ratio = effects["log_time"]
        report[treatment]["time_ratio"] = (
            None
            if not ratio.estimated
            else {key: math.exp(getattr(ratio, key)) for key in ("estimate", "low", "high", "one_sided_bound")}
        )
    return report
