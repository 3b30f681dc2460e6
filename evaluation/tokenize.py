"""Tokenisers shared by all metrics, by name: sacrebleu's (`13a`, `intl`, `char`, `none`) and `single-space`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from evaluation.errors import ConfigurationError

Tokenizer = Callable[[str], list[str]]

# `single-space` reproduces the original ChatEval site, which split on " " exactly (so double spaces
# produce empty tokens); `none` splits on any whitespace run, as sacrebleu does after tokenising.
OWN_TOKENIZERS = {"single-space"}
SACREBLEU_TOKENIZERS = {"13a", "intl", "char", "none"}


@lru_cache
def get_tokenizer(name: str, lowercase: bool = False) -> Tokenizer:
    if name == "single-space":
        if lowercase:
            return lambda text: text.lower().split(" ")
        return lambda text: text.split(" ")
    if name not in SACREBLEU_TOKENIZERS:
        known = ", ".join(sorted(OWN_TOKENIZERS | SACREBLEU_TOKENIZERS))
        raise ConfigurationError(f"unknown tokenizer {name!r} (known: {known})")
    from sacrebleu.metrics.bleu import BLEU

    # Same preprocessing as sacrebleu's BLEU: lowercase, strip the right end, tokenise, split.
    sacre = BLEU(tokenize=name).tokenizer
    if lowercase:
        return lambda text: sacre(text.lower().rstrip()).split()
    return lambda text: sacre(text.rstrip()).split()


def tokenize_all(texts: Sequence[str], name: str, lowercase: bool = False) -> list[list[str]]:
    tokenizer = get_tokenizer(name, lowercase)
    return [tokenizer(text) for text in texts]
