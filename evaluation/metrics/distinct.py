"""distinct-n (Li et al. 2016) and average response length: measurements of the responses alone."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress
from evaluation.metrics.ngrams import encode_texts, ngram_codes, sorted_unique
from evaluation.metrics.registry import register
from evaluation.tokenize import check_tokenizer


@dataclass(frozen=True)
class DistinctConfig:
    n: int = 1
    tokenizer: str = "13a"
    lowercase: bool = False

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("n must be at least 1")
        check_tokenizer(self.tokenizer)


@register
class Distinct(Metric):
    """Distinct n-grams over all responses / all tokens of all responses (n-grams never cross responses).

    Per prompt: distinct n-grams of the response / its tokens (0 for an empty response). The corpus score
    is not the mean of the per-prompt scores: it counts distinctness across the whole file.
    """

    family = "distinct"
    version = "1"
    parameter = "n"
    Config = DistinctConfig
    card = MetricCard(
        description="Number of distinct n-grams in all responses divided by the number of tokens in all "
        "responses (diversity; Li et al. 2016).",
        higher_is_better=True,
        citation="Li, Galley, Brockett, Gao, Dolan (2016). A Diversity-Promoting Objective Function for "
        "Neural Conversation Models. NAACL.",
    )

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        config: DistinctConfig = self.config
        corpus = encode_texts(inputs.responses, config.tokenizer, config.lowercase)
        codes, segments = ngram_codes(corpus, config.n, radix=len(corpus.vocab) + 1)
        codes = _ranks(codes, bound=len(corpus.vocab) + 1 if config.n == 1 else None)
        distinct_total = int(codes.max()) + 1 if codes.size else 0
        # Distinct n-grams within each response: unique (segment, code) pairs, counted per segment.
        pairs = sorted_unique(segments * max(distinct_total, 1) + codes)
        per_segment = np.bincount(pairs // max(distinct_total, 1), minlength=len(corpus.lengths))
        lengths = corpus.lengths
        per_prompt = np.divide(per_segment, lengths, out=np.zeros(len(lengths)), where=lengths > 0)
        total_tokens = int(lengths.sum())
        score = distinct_total / total_tokens if total_tokens else 0.0
        if progress:
            progress(len(lengths), len(lengths))
        return self.result(score, per_prompt.tolist(), distinct_ngrams=distinct_total, total_tokens=total_tokens)


def _ranks(codes: np.ndarray, bound: int | None) -> np.ndarray:
    """Each code's rank among the distinct codes (np.unique's inverse); codes below `bound` without sorting."""
    if bound is None or bound > 4 * len(codes) + 1_000_000:
        return np.unique(codes, return_inverse=True)[1].reshape(-1)
    present = np.zeros(bound, dtype=bool)
    present[codes] = True
    return (np.cumsum(present) - 1)[codes]


@dataclass(frozen=True)
class LengthConfig:
    tokenizer: str = "13a"

    def __post_init__(self) -> None:
        check_tokenizer(self.tokenizer)


@register
class AverageLength(Metric):
    """Mean number of tokens per response."""

    family = "avg-length"
    version = "1"
    Config = LengthConfig
    card = MetricCard(description="Mean number of tokens per response.", higher_is_better=None)

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        lengths = encode_texts(inputs.responses, self.config.tokenizer, False).lengths.tolist()
        return self.result(sum(lengths) / len(lengths) if lengths else 0.0, lengths)
