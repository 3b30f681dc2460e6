"""Embedding average (Liu et al. 2016): cosine between mean word vectors of response and reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

from evaluation.embeddings import WordVectors, load_vectors
from evaluation.errors import ConfigurationError
from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress
from evaluation.metrics.registry import register
from evaluation.tokenize import get_tokenizer, tokenize_all

CHUNK_ROWS = 20_000  # rows of float64 sums held at once: 20,000 x 300 x 8 bytes = 48 MB


@dataclass(frozen=True)
class EmbeddingConfig:
    vectors: str | None = None
    tokenizer: str = "13a"
    lowercase: bool = False
    multi_reference: str = "max"

    def __post_init__(self) -> None:
        if self.multi_reference not in ("max", "mean"):
            raise ValueError("multi_reference must be 'max' or 'mean'")
        get_tokenizer(self.tokenizer)


@register
class EmbeddingAverage(Metric):
    """Per prompt: cosine of mean vectors (out-of-vocabulary tokens ignored), best (or mean) over references.

    A response with no known token scores 0. A reference with no known token is skipped; a prompt left with
    no usable reference is left out of the corpus mean and counted in `details["prompts_left_out"]`.
    """

    family = "embedding-average"
    version = "1"
    Config = EmbeddingConfig
    card = MetricCard(
        description="Cosine similarity between the mean word vector of the response and of the reference, "
        "averaged over prompts.",
        higher_is_better=True,
        citation="Liu et al. (2016). How NOT To Evaluate Your Dialogue System. EMNLP.",
        needs=("responses", "references", "embeddings"),
    )

    @property
    def vectors(self) -> WordVectors:
        if not self.config.vectors:
            raise ConfigurationError(
                "embedding-average needs word vectors and none are configured: pass --embeddings PATH "
                "(gensim KeyedVectors or word2vec file; see `chateval embeddings --help`)"
            )
        return load_vectors(self.config.vectors)

    def signature_fields(self) -> dict:
        fields = super().signature_fields()
        vectors = self.vectors
        fields.pop("vectors")
        fields.update(vectors_sha256=vectors.sha256[:16], vectors_dim=vectors.dimensions)
        return fields

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        n = len(inputs.responses)
        per_prompt: list[float | None] = [None] * n
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            chunk = self._score_chunk(inputs.responses[start:stop], inputs.references[start:stop])
            per_prompt[start:stop] = chunk
            if progress:
                progress(stop, n)
        scored = [v for v in per_prompt if v is not None]
        corpus = float(np.mean(scored)) if scored else 0.0
        return self.result(corpus, per_prompt, prompts_left_out=n - len(scored))

    def _score_chunk(self, responses, references) -> list[float | None]:
        config: EmbeddingConfig = self.config
        n = len(responses)
        owner = np.array([i for i, refs in enumerate(references) for _ in refs], dtype=np.int64)
        refs_flat = [ref for refs in references for ref in refs]
        tokens = tokenize_all(list(responses) + refs_flat, config.tokenizer, config.lowercase)
        sums = vector_sums(tokens, self.vectors)
        response_vecs, ref_vecs = sums[:n], sums[n:]
        ref_norms = np.linalg.norm(ref_vecs, axis=1)
        denominator = np.linalg.norm(response_vecs, axis=1)[owner] * ref_norms
        dots = np.einsum("ij,ij->i", response_vecs[owner], ref_vecs)
        cosines = np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)
        usable = ref_norms > 0
        count = np.bincount(owner[usable], minlength=n)
        if config.multi_reference == "max":
            values = np.full(n, -np.inf)
            np.maximum.at(values, owner[usable], cosines[usable])
        else:
            values = np.bincount(owner[usable], weights=cosines[usable], minlength=n) / np.maximum(count, 1)
        return [float(values[i]) if count[i] > 0 else None for i in range(n)]


def vector_sums(token_lists, vectors: WordVectors) -> np.ndarray:
    """Sum of the known tokens' vectors per token list, float64, shape (len(token_lists), dim).

    The sum points the same way as the mean, and cosine ignores length. Only the vocabulary rows that
    occur are read, so a memory-mapped GoogleNews file is never copied whole.
    """
    key_to_index = vectors.keyed_vectors.key_to_index  # type: ignore[attr-defined]
    matrix = vectors.keyed_vectors.vectors  # type: ignore[attr-defined]
    rows, cols = [], []
    for row, tokens in enumerate(token_lists):
        for token in tokens:
            index = key_to_index.get(token)
            if index is not None:
                rows.append(row)
                cols.append(index)
    used, local = np.unique(np.asarray(cols, dtype=np.int64), return_inverse=True)
    sub = np.asarray(matrix[used], dtype=np.float64)
    counts = scipy.sparse.csr_matrix(
        (np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), local)), shape=(len(token_lists), len(used))
    )
    return np.asarray(counts @ sub)
