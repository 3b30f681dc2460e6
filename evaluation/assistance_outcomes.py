"""What the assistance estimators measure, per annotation: log handling time, agreement with other participants,
equality with the judge's suggestion, and how much of a real-time draft was kept."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Sequence
from difflib import SequenceMatcher
from typing import Any

import numpy as np

from evaluation.errors import InvalidInputError

MAX_DRAFT_WORDS = 5_000
WORD = re.compile(r"\S+")


def factorize(values: Sequence[Hashable] | np.ndarray) -> tuple[np.ndarray, list[Hashable]]:
    """Codes 0..k-1 in order of first appearance (integer arrays: in sorted order) and the k distinct values."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        keys, codes = np.unique(values, return_inverse=True)
        return codes.astype(np.int64), keys.tolist()
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(index)


def canonical_answer(value: Any) -> str:
    """A hashable form of a JSON answer; multi-select lists compare as sets, strings trimmed and case-folded."""
    if isinstance(value, list):
        return json.dumps(sorted(canonical_answer(v) for v in value))
    if isinstance(value, str):
        return json.dumps(value.strip().casefold())
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return json.dumps(float(value))
    return json.dumps(value, sort_keys=True)


def agreement_with_others(
    items: Sequence[Hashable],
    answers: Sequence[Any],
    reference: Sequence[bool] | np.ndarray,
) -> np.ndarray:
    """Per annotation: the share of the OTHER reference annotations of the same item (message and question) that
    give the same answer; NaN when the item has no other reference annotation. Shape (n,).

    Use the unassisted annotations as the reference: their answers were not moved by a suggestion, so every arm is
    compared with the same yardstick (with all annotations as the reference, assisted participants who copy the
    same suggestion would agree with each other by construction)."""
    ref = np.asarray(reference, dtype=bool)
    if not (len(items) == len(answers) == len(ref)):
        raise InvalidInputError("items, answers and reference must be aligned: one entry per annotation")
    item_codes, _ = factorize(items)
    answer_codes, _ = factorize([canonical_answer(a) for a in answers])
    return agreement_from_codes(item_codes, answer_codes, ref)


def agreement_from_codes(item_codes: np.ndarray, answer_codes: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """`agreement_with_others` on integer codes of items and canonical answers (no gaps needed)."""
    ref = reference.astype(np.int64)
    n_items = int(item_codes.max()) + 1 if len(item_codes) else 0
    width = int(answer_codes.max()) + 1 if len(answer_codes) else 1
    cell = item_codes * width + answer_codes
    same = np.bincount(cell[reference], minlength=n_items * width)[cell] - ref
    total = np.bincount(item_codes[reference], minlength=n_items)[item_codes] - ref
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, same / np.maximum(total, 1), np.nan)


def equals_suggestion(answers: Sequence[Any], suggestions: Sequence[Any]) -> np.ndarray:
    """1.0 where the answer equals the judge's suggestion for that annotation, 0.0 where not, NaN where there was
    no suggestion (None). Shape (n,)."""
    if len(answers) != len(suggestions):
        raise InvalidInputError("answers and suggestions must be aligned: one entry per annotation")
    return np.array(
        [
            np.nan if s is None else float(canonical_answer(a) == canonical_answer(s))
            for a, s in zip(answers, suggestions, strict=True)
        ],
        dtype=float,
    )


def log_times(handling_ms: Sequence[float | None]) -> np.ndarray:
    """Natural log of the handling time in seconds; NaN where unknown. Non-positive or non-finite times refused."""
    ms = np.array([np.nan if v is None else v for v in handling_ms], dtype=float)
    known = ~np.isnan(ms)
    if np.any(~np.isfinite(ms[known])) or np.any(ms[known] <= 0):
        raise InvalidInputError("handling_ms must be positive milliseconds (or None when unknown)")
    return np.log(ms / 1000.0)


def kept_fraction(draft: str, final: str) -> float:
    """Share of the draft's words kept in the final text, in order (difflib matching blocks over words); 1.0 for an
    empty draft. Texts are cut at MAX_DRAFT_WORDS words so the quadratic matcher stays bounded."""
    draft_words = WORD.findall(draft)[:MAX_DRAFT_WORDS]
    final_words = WORD.findall(final)[:MAX_DRAFT_WORDS]
    if not draft_words:
        return 1.0
    matcher = SequenceMatcher(None, draft_words, final_words, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    return kept / len(draft_words)
