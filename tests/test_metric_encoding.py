"""Encoding many lines at once (one split per chunk, a sentinel between lines) gives each line's own tokens."""

from __future__ import annotations

import random

import pytest

from evaluation.metrics import ngrams
from evaluation.metrics.ngrams import encode_texts
from evaluation.tokenize import get_tokenizer, tokenize_texts

# spaces, tabs, carriage returns, a Unicode line separator, case that lower() changes, and the sentinel itself
ALPHABET = ["a", "B", "c", " ", "  ", "\t", "\r", "é", "Σ", "\u2028", "\x00"]


def decoded(corpus) -> list[list[str]]:
    words = {index: word for word, index in corpus.vocab.items()}
    lines, position = [], 0
    for length in corpus.lengths.tolist():
        lines.append([words[i] for i in corpus.ids[position : position + length].tolist()])
        position += length
    return lines


@pytest.mark.parametrize("tokenizer", ["single-space", "stripped-single-space", "none", "13a"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_chunked_encoding_equals_line_by_line_tokens(tokenizer, lowercase, monkeypatch):
    monkeypatch.setattr(ngrams, "ENCODE_CHUNK", 4)  # many chunks, each with a shared vocabulary
    rng = random.Random(7)
    for trial in range(400):
        texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 11))]
        if trial % 3:
            texts = [text.replace("\x00", "") for text in texts]  # most chunks take the joined path
        corpus = encode_texts(texts, tokenizer, lowercase)
        assert decoded(corpus) == tokenize_texts(texts, tokenizer, lowercase), texts
        assert int(corpus.lengths.sum()) == len(corpus.ids)


# Only " " as whitespace, so chunks take the shared split; characters that 13a's rules, lower() and strip() act on.
SPACED = ["a", "B", "Σ", "ΑΣ", "İ", "0", "9", ".", ",", "-", "(", "'", "&quot;", "&amp;", "<skipped>", "<", " ", "  "]


@pytest.mark.parametrize("tokenizer", ["single-space", "stripped-single-space", "none", "13a", "intl"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_tokens_derived_from_one_split_equal_the_tokenizer(tokenizer, lowercase, monkeypatch):
    monkeypatch.setattr(ngrams, "ENCODE_CHUNK", 5)
    rng = random.Random(11)
    tokenize = get_tokenizer(tokenizer, lowercase)  # sacrebleu's own tokenizer, line by line, for 13a and intl
    shared = 0
    for _ in range(300):
        texts = ["".join(rng.choice(SPACED) for _ in range(rng.randint(0, 10))) for _ in range(rng.randint(1, 12))]
        shared += sum(chunk is not None for chunk in ngrams.split_texts(texts).chunks)
        corpus = encode_texts(texts, tokenizer, lowercase)
        assert decoded(corpus) == [tokenize(text) for text in texts], texts
        assert int(corpus.lengths.sum()) == len(corpus.ids)
    assert shared > 300  # the derived path was taken


def test_other_whitespace_is_every_space_character_but_the_space():
    everything = (chr(code) for code in range(0x110000))
    assert set(ngrams.OTHER_WHITESPACE) == {c for c in everything if c.isspace() and c != " "}
