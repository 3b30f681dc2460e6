"""Integer-coded n-grams over many token sequences at once, so metrics count with numpy instead of loops."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain

import numpy as np

from evaluation.tokenize import RecentResults, tokenize_texts


@dataclass(frozen=True)
class EncodedCorpus:
    """Token ids of many sequences, concatenated.

    ids: shape (n_tokens,), int32 (half the memory of int64); lengths: shape (n_sequences,), int64;
    starts: shape (n_sequences,).
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
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int32, count=len(flat))
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    return EncodedCorpus(ids=ids, lengths=lengths, vocab=vocab)


def concatenate(first: EncodedCorpus, second: EncodedCorpus) -> EncodedCorpus:
    """One corpus of `first`'s sequences then `second`'s, with ids in one shared vocabulary."""
    vocab = dict(first.vocab)
    remap = np.fromiter(
        (vocab.setdefault(w, len(vocab)) for w in second.vocab), dtype=np.int32, count=len(second.vocab)
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
        return corpus.ids.astype(np.int64), segments
    count = len(corpus.ids) - n + 1
    if count <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    # A window is valid when its first and last token belong to the same sequence.
    valid = segments[:count] == segments[n - 1 :]
    codes = corpus.ids[:count].astype(np.int64)
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


# Every tokeniser's tokens are derived from one split of the texts on " ", done once per texts and shared by all
# metrics of an evaluation (distinct-n, average length, BLEU and the embedding metrics each tokenise differently).
# A chunk of lines is joined by a space, a sentinel token and a space, and split once: exactly the lines' tokens
# with the sentinel between lines (a trailing space still gives its empty token under split(" ")). A chunk whose
# text holds the sentinel or any whitespace but " " is tokenised line by line instead, by the tokeniser itself.
SENTINEL = "\x00"
# Every character but " " that str.isspace() accepts (what split() splits on and strip() strips), as of Unicode 15;
# tests/test_metric_encoding.py checks the list against str.isspace() over all code points.
OTHER_WHITESPACE = tuple("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007")
OTHER_WHITESPACE += tuple("\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_OTHER_ASCII_WHITESPACE = tuple(c for c in OTHER_WHITESPACE if c.isascii())


@dataclass(frozen=True)
class SpaceSplit:
    """texts split on " ": per chunk an EncodedCorpus over the shared `vocab`, or None (tokenise line by line)."""

    vocab: dict[str, int]
    chunks: list[EncodedCorpus | None]


def _only_spaces(joined: str) -> bool:
    """Whether " " is the only whitespace in `joined` (`in` scans run at memory speed; a regex is 30 times slower)."""
    return not any(c in joined for c in (_OTHER_ASCII_WHITESPACE if joined.isascii() else OTHER_WHITESPACE))


def _split_chunk(texts: Sequence[str], vocab: defaultdict[str, int]) -> EncodedCorpus | None:
    joined = f" {SENTINEL} ".join(texts) + f" {SENTINEL}"
    if joined.count(SENTINEL) != len(texts) or not _only_spaces(joined):
        return None
    flat = joined.split(" ")
    # vocab numbers a new word as it is met (its default_factory is its own length): one C loop
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int32, count=len(flat))
    is_end = ids == vocab[SENTINEL]
    lengths = np.diff(np.flatnonzero(is_end), prepend=-1) - 1
    return EncodedCorpus(ids=ids[~is_end], lengths=lengths.astype(np.int64), vocab=vocab)


def _split_texts(texts: Sequence[str]) -> SpaceSplit:
    numbering: defaultdict[str, int] = defaultdict()
    numbering.default_factory = numbering.__len__
    chunks = [
        _split_chunk(texts[start : start + ENCODE_CHUNK], numbering) for start in range(0, len(texts), ENCODE_CHUNK)
    ]
    numbering.default_factory = None  # drops the reference cycle
    vocab = dict(numbering)
    return SpaceSplit(vocab=vocab, chunks=[None if c is None else replace(c, vocab=vocab) for c in chunks])


split_texts = RecentResults(_split_texts)


@dataclass(frozen=True)
class WordTokens:
    """Each " "-separated word's tokens under one tokeniser: word w gives flat[start[w] : start[w] + count[w]]."""

    flat: np.ndarray
    start: np.ndarray
    count: np.ndarray


def _word_tokens(words: list[str], tokenizer: str, lowercase: bool, vocab: dict[str, int]) -> WordTokens:
    """A line without whitespace but " " tokenises, under every tokeniser here, to its words' tokens in order:
    lower() works word by word (the final-sigma rule stops at a space), `none` drops the empty words, and sacrebleu's
    13a rules never join or split across a space (tests/test_metric_encoding.py checks both against the tokenisers)."""
    forms = [word.lower() for word in words] if lowercase else words
    if tokenizer in ("single-space", "stripped-single-space", "none"):
        flat_tokens = forms  # word i's token is flat[i]; `none` gives the empty word no token (count 0)
        start = np.arange(len(forms), dtype=np.int64)
        count = np.ones(len(forms), dtype=np.int64)
        if tokenizer == "none":
            count = (np.fromiter(map(len, forms), dtype=np.int64, count=len(forms)) > 0).astype(np.int64)
    else:
        per_word = tokenize_texts(forms, tokenizer, False)
        count = np.fromiter(map(len, per_word), dtype=np.int64, count=len(per_word))
        flat_tokens = list(chain.from_iterable(per_word))
        start = np.cumsum(count) - count
    for token in dict.fromkeys(flat_tokens):
        if token not in vocab:
            vocab[token] = len(vocab)
    flat = np.fromiter(map(vocab.__getitem__, flat_tokens), dtype=np.int32, count=len(flat_tokens))
    return WordTokens(flat=flat, start=start, count=count)


def _strip_mask(chunk: EncodedCorpus, empty: int) -> np.ndarray:
    """Tokens that strip().split(" ") keeps: not the empty words at either end of a line, but a line of nothing
    but empty words keeps one (strip() leaves "", which splits to [""])."""
    filled = chunk.ids != empty
    before = np.cumsum(filled) - filled  # filled tokens before each token, from the start of the text
    ends = np.cumsum(chunk.lengths)
    line_start = np.repeat(ends - chunk.lengths, chunk.lengths)
    line_end = np.repeat(ends, chunk.lengths)
    total = np.concatenate(([0], np.cumsum(filled)))
    before_in_line = before - total[line_start]
    after_in_line = total[line_end] - total[line_start] - before_in_line - filled
    keep = filled | ((before_in_line > 0) & (after_in_line > 0))
    first_of_empty_line = (np.arange(len(chunk.ids)) == line_start) & (total[line_end] == total[line_start])
    return keep | first_of_empty_line


def _derive(
    chunk: EncodedCorpus, words: WordTokens, tokenizer: str, empty: int, vocab: dict[str, int]
) -> EncodedCorpus:
    """The chunk's tokens under the tokeniser, from its " "-split word ids."""
    ids, lengths = chunk.ids, chunk.lengths
    if tokenizer == "stripped-single-space" and len(ids):
        keep = _strip_mask(chunk, empty)
        lengths = np.add.reduceat(keep, np.cumsum(lengths) - lengths).astype(np.int64) if len(lengths) else lengths
        ids = ids[keep]
    counts = words.count[ids]
    if len(counts) and counts.max() <= 1:  # one token per word or none: no ragged gather
        if counts.min() == 0:
            kept = np.concatenate(([0], np.cumsum(counts)))
            ends = np.cumsum(lengths)
            lengths = kept[ends] - kept[ends - lengths]
            ids = ids[counts == 1]
        return EncodedCorpus(ids=words.flat[words.start[ids]], lengths=lengths, vocab=vocab)
    total = np.concatenate(([0], np.cumsum(counts)))
    ends = np.cumsum(lengths)
    new_lengths = total[ends] - total[ends - lengths]
    # token k of word i sits at words.start[id_i] + k: one ragged gather
    positions = np.repeat(words.start[ids] - total[:-1], counts) + np.arange(int(total[-1]))
    return EncodedCorpus(ids=words.flat[positions], lengths=new_lengths.astype(np.int64), vocab=vocab)


# Tokenisers whose tokens of a line are its " "-separated words' tokens (sacrebleu's intl and char are not).
WORD_LOCAL = {"single-space", "stripped-single-space", "none", "13a"}


def _encode_texts(texts: Sequence[str], tokenizer: str, lowercase: bool) -> EncodedCorpus:
    vocab: dict[str, int] = {}
    if tokenizer not in WORD_LOCAL:
        chunks = [texts[start : start + ENCODE_CHUNK] for start in range(0, len(texts), ENCODE_CHUNK)]
        parts = [_encode_into(tokenize_texts(lines, tokenizer, lowercase), vocab) for lines in chunks]
        return _joined(parts, vocab)
    split = split_texts(texts)
    words = _word_tokens([w if w != SENTINEL else "" for w in split.vocab], tokenizer, lowercase, vocab)
    empty = split.vocab.get("", -1)
    parts = []
    for index, chunk in enumerate(split.chunks):
        if chunk is None:
            lines = texts[index * ENCODE_CHUNK : (index + 1) * ENCODE_CHUNK]
            parts.append(_encode_into(tokenize_texts(lines, tokenizer, lowercase), vocab))
        else:
            parts.append(_derive(chunk, words, tokenizer, empty, vocab))
    return _joined(parts, vocab)


def _joined(parts: list[EncodedCorpus], vocab: dict[str, int]) -> EncodedCorpus:
    if not parts:
        return encode([])
    ids = np.concatenate([part.ids for part in parts])
    return EncodedCorpus(ids=ids, lengths=np.concatenate([part.lengths for part in parts]), vocab=vocab)


encode_texts = RecentResults(_encode_texts, size=8)
"""encode_texts(texts, tokenizer, lowercase) -> EncodedCorpus, shared between metrics of one evaluation."""
