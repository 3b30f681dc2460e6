"""What a post-edit changed: the word-level differences between a system's reply and a person's edit of it
(difflib's matching blocks over whitespace-separated words), as spans with their place in the original text.

A span: {"op": "replace" | "delete" | "insert", "original": the original words (as written, inner whitespace kept),
"edited": the words that replace them, "start", "end": character offsets of the original words in the original
text (an insertion has start == end: the place where the words go)}. Whitespace-only changes are no change.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

WORD = re.compile(r"\S+")


def changed_spans(original: str, edited: str) -> list[dict[str, Any]]:
    """The spans that turn `original` into `edited`, in the order of the original text."""
    before = list(WORD.finditer(original))
    after = list(WORD.finditer(edited))
    matcher = SequenceMatcher(None, [m.group() for m in before], [m.group() for m in after], autojunk=False)
    spans = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if i1 < i2:
            start, end = before[i1].start(), before[i2 - 1].end()
        else:
            start = end = before[i1].start() if i1 < len(before) else (before[-1].end() if before else 0)
        spans.append(
            {
                "op": op,
                "original": original[start:end],
                "edited": edited[after[j1].start() : after[j2 - 1].end()] if j1 < j2 else "",
                "start": start,
                "end": end,
            }
        )
    return spans


def edit_size(original: str, spans: list[dict[str, Any]]) -> dict[str, float | int]:
    """How much an edit changed: words removed and added, and the share of the original's words touched."""
    removed = sum(len(WORD.findall(span["original"])) for span in spans)
    added = sum(len(WORD.findall(span["edited"])) for span in spans)
    words = len(WORD.findall(original))
    return {
        "spans": len(spans),
        "words_removed": removed,
        "words_added": added,
        "changed_share": removed / words if words else float(added > 0),
    }
