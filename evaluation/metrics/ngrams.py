"""Integer-coded n-grams over many token sequences at once, so metrics count with numpy instead of loops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from evaluation.tokenize import RecentResults, tokenize_texts


@dataclass(frozen=True)
class EncodedCorpus:
    """Token ids of many sequences, concatenated.

    ids: shape (n_tokens,), int64; lengths: shape (n_sequences,), int64; starts: shape (n_sequences,).
    """

    ids: np.ndarray
    lengths: np.ndarray
    vocab: dict[str, int]

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)

    @property
    def segment_of_token(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.lengths), dtype=np.int64), self.lengths)


def encode(token_lists: Sequence[Sequence[str]]) -> EncodedCorpus:
    """Map tokens to ids (in order of first appearance); the loops run in C (chain, dict, map)."""
    vocab: dict[str, int] = {}
    return _encode_into(token_lists, vocab)


def _encode_into(token_lists: Sequence[Sequence[str]], vocab: dict[str, int]) -> EncodedCorpus:
    """Encode with `vocab`, adding new tokens to it."""
    flat = list(chain.from_iterable(token_lists))
    for word in dict.fromkeys(flat):
        if word not in vocab:
            vocab[word] = len(vocab)
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    return EncodedCorpus(ids=ids, lengths=lengths, vocab=vocab)


def concatenate(first: EncodedCorpus, second: EncodedCorpus) -> EncodedCorpus:
    """One corpus of `first`'s sequences then `second`'s, with ids in one shared vocabulary."""
    vocab = dict(first.vocab)
    remap = np.fromiter(
        (vocab.setdefault(w, len(vocab)) for w in second.vocab), dtype=np.int64, count=len(second.vocab)
    )
    ids = np.concatenate([first.ids, remap[second.ids]]) if len(second.ids) else first.ids.copy()
    return EncodedCorpus(ids=ids, lengths=np.concatenate([first.lengths, second.lengths]), vocab=vocab)


def ngram_codes(corpus: EncodedCorpus, n: int, radix: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes of every n-gram that lies within one sequence, and the sequence each comes from.

    Two n-grams of this call get the same code exactly when their tokens are equal; for n > 2 codes are
    renumbered, so compare codes only within one call (encode hypotheses and references together).
    `radix` must exceed every id (pass the vocabulary size). Returns (codes, segments), both shape (n_ngrams,), int64.
    """
    segments = corpus.segment_of_token
    if n == 1:
        return corpus.ids.copy(), segments
    count = len(corpus.ids) - n + 1
    if count <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    # A window is valid when its first and last token belong to the same sequence.
    valid = segments[:count] == segments[n - 1 :]
    codes = corpus.ids[:count].copy()
    for offset in range(1, n):
        # Re-number after each step so codes stay small enough not to overflow int64.
        codes = codes * radix + corpus.ids[offset : offset + count]
        if offset < n - 1:
            _, codes = np.unique(codes, return_inverse=True)
            codes = codes.astype(np.int64)
    return codes[valid], segments[:count][valid]


ENCODE_CHUNK = 5_000
"""Lines tokenised at once: their token strings (about 60 bytes each) exist only while their chunk is encoded."""


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) by sorting: numpy 2.4's hash table (plain np.unique of integers) is 30 times slower on
    (segment, n-gram) keys of a million tokens."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


# The whitespace tokenisers split one string per chunk of lines instead of one per line: lines joined by a space,
# a sentinel token and a space split into exactly the lines' tokens with the sentinel between lines (a trailing
# space still gives its empty token under split(" ")). A chunk whose text holds the sentinel is split line by line.
SENTINEL = "\x00"
_SPLITTERS = {"single-space": (False, " "), "stripped-single-space": (True, " "), "none": (False, None)}


def _encode_chunk(texts: Sequence[str], tokenizer: str, lowercase: bool, vocab: dict[str, int]) -> EncodedCorpus:
    if tokenizer not in _SPLITTERS:
        return _encode_into(tokenize_texts(texts, tokenizer, lowercase), vocab)
    strip, separator = _SPLITTERS[tokenizer]
    if lowercase:
        texts = [text.lower() for text in texts]
    if strip:
        texts = [text.strip() for text in texts]
    joined = f" {SENTINEL} ".join(texts) + f" {SENTINEL}"
    if joined.count(SENTINEL) != len(texts):
        return _encode_into(tokenize_texts(texts, tokenizer, False), vocab)
    flat = joined.split(separator)
    vocab.setdefault(SENTINEL, len(vocab))
    for word in dict.fromkeys(flat):
        if word not in vocab:
            vocab[word] = len(vocab)
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    is_end = ids == vocab[SENTINEL]
    ends = np.flatnonzero(is_end)
    lengths = np.diff(ends, prepend=-1) - 1
    return EncodedCorpus(ids=ids[~is_end], lengths=lengths.astype(np.int64), vocab=vocab)


def _encode_texts(texts: Sequence[str], tokenizer: str, lowercase: bool) -> EncodedCorpus:
    vocab: dict[str, int] = {}
    parts = [
        _encode_chunk(texts[start : start + ENCODE_CHUNK], tokenizer, lowercase, vocab)
        for start in range(0, len(texts), ENCODE_CHUNK)
    ]
    if not parts:
        return encode([])
    ids = np.concatenate([part.ids for part in parts])
    return EncodedCorpus(ids=ids, lengths=np.concatenate([part.lengths for part in parts]), vocab=vocab)


encode_texts = RecentResults(_encode_texts)
"""encode_texts(texts, tokenizer, lowercase) -> EncodedCorpus, shared between metrics of one evaluation."""
