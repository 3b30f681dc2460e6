"""Reference log-likelihood files (JSONL `prompt_id`, `logprob`, `tokens`) for the perplexity metric."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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


def parse_loglik(data: bytes, *, dataset: Dataset, name: str | Path) -> LogLikelihoods:
    lines = decode_lines(data, name=name)
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
