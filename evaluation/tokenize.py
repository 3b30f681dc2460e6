"""Tokenisers shared by all metrics, by name: sacrebleu's (`13a`, `intl`, `char`, `none`) and `single-space`."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from evaluation.errors import ConfigurationError

Tokenizer = Callable[[str], list[str]]

# `single-space` reproduces the original ChatEval site's distinct-n, which split on " " exactly (so double spaces
# produce empty tokens); `stripped-single-space` its embedding metrics, which stripped the line first; `none`
# splits on any whitespace run, as sacrebleu does after tokenising (and as the site's average length did).
OWN_TOKENIZERS = {"single-space", "stripped-single-space"}
SACREBLEU_TOKENIZERS = {"13a", "intl", "char", "none"}


def check_tokenizer(name: str) -> None:
    """Refuse an unknown tokenizer name, without importing sacrebleu (0.15 s) as building one does."""
    if name not in OWN_TOKENIZERS | SACREBLEU_TOKENIZERS:
        known = ", ".join(sorted(OWN_TOKENIZERS | SACREBLEU_TOKENIZERS))
        raise ConfigurationError(f"unknown tokenizer {name!r} (known: {known})")


@lru_cache
def get_tokenizer(name: str, lowercase: bool = False) -> Tokenizer:
    if name == "single-space":
        if lowercase:
            return lambda text: text.lower().split(" ")
        return lambda text: text.split(" ")
    if name == "stripped-single-space":
        if lowercase:
            return lambda text: text.lower().strip().split(" ")
        return lambda text: text.strip().split(" ")
    check_tokenizer(name)
    from sacrebleu.metrics.bleu import BLEU

    # Same preprocessing as sacrebleu's BLEU: lowercase, strip the right end, tokenise, split.
    sacre = BLEU(tokenize=name).tokenizer
    if lowercase:
        return lambda text: sacre(text.lower().rstrip()).split()
    return lambda text: sacre(text.rstrip()).split()


class RecentResults:
    """The last few results of an expensive function of a list of texts. Every metric of one evaluation
    tokenises (and encodes) the same responses, which is most of the work, so it is done once."""

    def __init__(self, compute: Callable[..., Any], size: int = 4):
        self.compute = compute
        self.size = size
        self.entries: list[tuple[tuple, tuple[str, ...], Any]] = []

    def __call__(self, texts: Sequence[str], *params: Any) -> Any:
        texts = tuple(texts)
        key = (params, len(texts), hash(texts))
        for entry_key, entry_texts, value in self.entries:
            if entry_key == key and entry_texts == texts:
                return value
        value = self.compute(texts, *params)
        self.entries = [(key, texts, value), *self.entries[: self.size - 1]]
        return value


def tokenize_texts(texts: Sequence[str], name: str, lowercase: bool = False) -> list[list[str]]:
    """Token lists for `texts`, computed afresh (metrics encode a chunk of lines at a time with it)."""
    if name == "13a":
        return tokenize_13a_batch(texts, lowercase)
    tokenizer = get_tokenizer(name, lowercase)
    return [tokenizer(text) for text in texts]


_recent_tokenizations = RecentResults(tokenize_texts)


def tokenize_all(texts: Sequence[str], name: str, lowercase: bool = False) -> list[list[str]]:
    """Token lists for `texts`. The result is shared with later calls on equal texts: do not modify it."""
    return _recent_tokenizations(texts, name, lowercase)


# sacrebleu's 13a tokenizer, applied to many lines in one pass. Its first rule puts spaces around one
# class of punctuation (done here with str.translate, exactly); the other three rules are regexes whose
# matches never span the "\n" between two space-padded lines, so one `re.sub` over the joined text gives
# the same result as one per line. tests/test_metric_bleu.py checks equality with sacrebleu itself.
_PUNCTUATION = '{|}~[\\]^_` !"#$%&()*+:;<=>?@/'
_SPACE_AROUND = str.maketrans({c: f" {c} " for c in _PUNCTUATION})
_13A_RULES = [
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def _13a_prepare(line: str) -> str:
    line = line.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return f" {line} "


def tokenize_13a_batch(texts: Sequence[str], lowercase: bool = False) -> list[list[str]]:
    if lowercase:
        texts = [text.lower() for text in texts]
    joined = "\n".join(_13a_prepare(text) for text in texts).translate(_SPACE_AROUND)
    for pattern, replacement in _13A_RULES:
        joined = pattern.sub(replacement, joined)
    return [segment.split() for segment in joined.split("\n")] if texts else []
