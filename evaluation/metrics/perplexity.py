"""Perplexity of the reference responses under the submitted system, from its log-likelihood file."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.errors import ConfigurationError
from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress
from evaluation.metrics.registry import register


@dataclass(frozen=True)
class PerplexityConfig:
    source: str = "submitted-reference-loglik"


@register
class Perplexity(Metric):
    """exp(-sum logprob / sum tokens) over all prompts; per prompt exp(-logprob / tokens)."""

    family = "perplexity"
    version = "1"
    Config = PerplexityConfig
    card = MetricCard(
        description="Perplexity the submitted system assigns to the reference responses, from the "
        "log-likelihood file it submits: exp(-sum logprob / sum tokens).",
        higher_is_better=False,
        citation="Sedoc et al. (2019). ChatEval: A Tool for Chatbot Evaluation. NAACL demos.",
        needs=("loglik",),
    )

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        if inputs.loglik is None:
            raise ConfigurationError("perplexity needs the system's reference log-likelihood file (--loglik FILE)")
        logprob, tokens = inputs.loglik.logprob, inputs.loglik.tokens
        per_prompt = np.exp(-logprob / tokens)
        corpus = float(np.exp(-logprob.sum() / tokens.sum()))
        return self.result(corpus, per_prompt.tolist(), total_tokens=int(tokens.sum()))
