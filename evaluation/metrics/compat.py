"""Named metric configurations that reproduce numbers published elsewhere (`--compat NAME`)."""

from __future__ import annotations

from typing import Any

from evaluation.errors import NotFoundError

COMPAT: dict[str, dict[str, dict[str, Any]]] = {
    # The original ChatEval site (Sedoc et al. 2019) tokenised differently per metric: distinct-n split each
    # line on single spaces (empty tokens counted), average length counted `line.strip().split()` tokens
    # (any whitespace run, empty tokens never counted: sacrebleu's `none`), the embedding metrics split the
    # stripped line on single spaces (tests/test_compat_chateval_original.py restates each). BLEU-2 was NLTK's
    # sentence_bleu with weights (.5, .5), lower-cased, no smoothing, on a 0-1 scale, which sacrebleu
    # reproduces with the settings below (tests/test_compat_chateval.py checks this against NLTK).
    "chateval-2019": {
        "distinct": {"tokenizer": "single-space", "lowercase": False},
        "avg-length": {"tokenizer": "none"},
        "embedding-average": {"tokenizer": "stripped-single-space", "lowercase": False},
        "bleu": {
            "tokenizer": "none",
            "lowercase": True,
            "smooth_method": "none",
            "effective_order": False,
            "scale": 1.0,
        },
    },
}


def compat_overrides(name: str | None) -> dict[str, dict[str, Any]]:
    if name is None:
        return {}
    if name not in COMPAT:
        raise NotFoundError(f"unknown compatibility configuration {name!r} (known: {', '.join(COMPAT)})")
    return COMPAT[name]
