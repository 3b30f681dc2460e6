"""Reference log-likelihood files (JSONL `prompt_id`, `logprob`, `tokens`) for the perplexity metric."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic_core import from_json

from evaluation.dataset import Dataset
from evaluation.errors import InvalidInputError
from evaluation.responses import check_complete, check_prompt_id, parse_jsonl_records
from evaluation.textfile import decode_lines, read_bytes

MAX_TOKENS = 1_000_000
"""Most tokens one reference may have: far above any real reply (a line holds at most 20,000 characters by default),
and low enough that the corpus sum over a million prompts stays exact in int64 (near 2**63 it used to wrap)."""


@dataclass(frozen=True)
class LogLikelihoods:
    """Per prompt, in dataset order: natural-log probability of the reference and its token count."""

    logprob: np.ndarray  # shape (n_prompts,), float64, <= 0
    tokens: np.ndarray  # shape (n_prompts,), int64, >= 1


def _is_finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


KEYS = frozenset({"prompt_id", "logprob", "tokens"})


def _parse_clean(lines: list[str], dataset: Dataset) -> LogLikelihoods | None:
    """The common case at a quarter of the cost: every line an object with exactly the three keys, a string id of
    the dataset, each id once, finite logprob <= 0 and tokens from 1 to MAX_TOKENS. None for any other file, which
    `parse_loglik` then reads line by line for the error that names the line."""
    try:
        records = [from_json(line) for line in lines if line.strip()]
        if len(records) != len(dataset) or not all(type(r) is dict and r.keys() == KEYS for r in records):
            return None
        ids = [r["prompt_id"] for r in records]
        values = [r["logprob"] for r in records]
        counts = [r["tokens"] for r in records]
        if {type(v) for v in ids} != {str} or not {type(v) for v in values} <= {int, float}:
            return None
        if {type(v) for v in counts} != {int}:
            return None
        logprob, tokens = np.array(values, dtype=np.float64), np.array(counts, dtype=np.int64)
    except (ValueError, OverflowError):
        return None
    if not (np.isfinite(logprob).all() and (logprob <= 0).all() and ((tokens >= 1) & (tokens <= MAX_TOKENS)).all()):
        return None
    if ids != list(dataset.prompt_ids):  # another order: place by id
        index_of = dataset.index_of
        order = [index_of.get(pid, -1) for pid in ids]
        if -1 in order or len(set(order)) != len(order):
            return None
        placed = np.asarray(order, dtype=np.int64)
        in_order_logprob, in_order_tokens = np.empty_like(logprob), np.empty_like(tokens)
        in_order_logprob[placed], in_order_tokens[placed] = logprob, tokens
        return LogLikelihoods(logprob=in_order_logprob, tokens=in_order_tokens)
    return LogLikelihoods(logprob=logprob, tokens=tokens)


def parse_loglik(data: bytes, *, dataset: Dataset, name: str | Path) -> LogLikelihoods:
    lines = decode_lines(data, name=name)
    clean = _parse_clean(lines, dataset)
    if clean is not None:
        return clean
    logprob = np.zeros(len(dataset), dtype=np.float64)
    tokens = np.zeros(len(dataset), dtype=np.int64)
    seen: dict[str, int] = {}
    for number, record in parse_jsonl_records(lines, name=name):
        missing = {"prompt_id", "logprob", "tokens"} - set(record)
        if missing:
            raise InvalidInputError(f"missing key(s): {', '.join(sorted(missing))}", path=name, line=number)
        index = check_prompt_id(record["prompt_id"], dataset=dataset, seen=seen, name=name, number=number)
        value, count = record["logprob"], record["tokens"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not _is_finite(value):
            raise InvalidInputError("'logprob' must be a finite number", path=name, line=number)
        if value > 0:
            raise InvalidInputError(
                f"'logprob' is {value}, but a log-probability cannot be positive", path=name, line=number
            )
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TOKENS:
            raise InvalidInputError(
                f"'tokens' is {count!r}; it must be a whole number from 1 to {MAX_TOKENS:,}", path=name, line=number
            )
        logprob[index], tokens[index] = value, count
    check_complete(seen, dataset=dataset, name=name)
    return LogLikelihoods(logprob=logprob, tokens=tokens)


def read_loglik(path: str | Path, *, dataset: Dataset) -> LogLikelihoods:
    return parse_loglik(read_bytes(Path(path)), dataset=dataset, name=path)
