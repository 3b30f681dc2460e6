"""Embedding average (Liu et al. 2016): cosine between mean word vectors of response and reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.embeddings import WordVectors, load_vectors
from evaluation.errors import ConfigurationError
from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress
from evaluation.metrics.ngrams import EncodedCorpus, encode_texts
from evaluation.metrics.registry import register
from evaluation.tokenize import check_tokenizer

CHUNK_ROWS = 2_000  # prompts at once: sums of their responses and references, 6,000 x 300 x 8 bytes = 14 MB


@dataclass(frozen=True)
class EmbeddingConfig:
    vectors: str | None = None
    tokenizer: str = "13a"
    lowercase: bool = False
    multi_reference: str = "max"

    def __post_init__(self) -> None:
        if self.multi_reference not in ("max", "mean"):
            raise ValueError("multi_reference must be 'max' or 'mean'")
        check_tokenizer(self.tokenizer)


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
        config: EmbeddingConfig = self.config
        n = len(inputs.responses)
        owner = np.array([i for i, refs in enumerate(inputs.references) for _ in refs], dtype=np.int64)
        refs_flat = [ref for refs in inputs.references for ref in refs]
        responses = self._rows(encode_texts(inputs.responses, config.tokenizer, config.lowercase))
        references = self._rows(encode_texts(refs_flat, config.tokenizer, config.lowercase))
        first_ref = np.searchsorted(owner, np.arange(n + 1))  # references of prompt i: first_ref[i]:first_ref[i+1]
        per_prompt: list[float | None] = [None] * n
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            response_sums = responses.sums(start, stop, self.vectors)
            ref_sums = references.sums(first_ref[start], first_ref[stop], self.vectors)
            per_prompt[start:stop] = self._best_cosines(
                response_sums, ref_sums, owner[first_ref[start] : first_ref[stop]] - start
            )
            if progress:
                progress(stop, n)
        scored = [v for v in per_prompt if v is not None]
        corpus = float(np.mean(scored)) if scored else 0.0
        return self.result(corpus, per_prompt, prompts_left_out=n - len(scored))

    def _rows(self, corpus: EncodedCorpus) -> VectorRows:
        key_to_index = self.vectors.keyed_vectors.key_to_index  # type: ignore[attr-defined]
        to_vector = np.fromiter(
            (key_to_index.get(w, -1) for w in corpus.vocab), dtype=np.int64, count=len(corpus.vocab)
        )
        # the vectors this text uses, numbered 0..K-1 (K at most the text's vocabulary), -1 out of vocabulary
        used, compact = np.unique(to_vector, return_inverse=True)
        if len(used) and used[0] < 0:
            used, compact = used[1:], compact - 1
        vector_ids = compact.reshape(-1).astype(np.int32)[corpus.ids]
        return VectorRows(vector_ids=vector_ids, starts=np.append(corpus.starts, len(corpus.ids)), used=used)

    def _best_cosines(self, response_sums: np.ndarray, ref_sums: np.ndarray, owner: np.ndarray) -> list[float | None]:
        n = len(response_sums)
        ref_norms = np.linalg.norm(ref_sums, axis=1)
        denominator = np.linalg.norm(response_sums, axis=1)[owner] * ref_norms
        dots = np.einsum("ij,ij->i", response_sums[owner], ref_sums)
        cosines = np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)
        usable = ref_norms > 0
        count = np.bincount(owner[usable], minlength=n)
        if self.config.multi_reference == "max":
            values = np.full(n, -np.inf)
            np.maximum.at(values, owner[usable], cosines[usable])
        else:
            values = np.bincount(owner[usable], weights=cosines[usable], minlength=n) / np.maximum(count, 1)
        return [v if c > 0 else None for v, c in zip(values.tolist(), count.tolist(), strict=True)]


@dataclass(frozen=True)
class VectorRows:
    """Token lists as rows of indices into `used` (-1: out of vocabulary), the word vectors' rows that occur.

    vector_ids: shape (n_tokens,); starts: shape (n_rows + 1,), row r is vector_ids[starts[r]:starts[r+1]];
    used: shape (K,), sorted row numbers of the word vectors.
    """

    vector_ids: np.ndarray
    starts: np.ndarray
    used: np.ndarray

    def sums(self, first: int, stop: int, vectors: WordVectors) -> np.ndarray:
        """Sum of the known tokens' vectors for rows first..stop-1, float64, shape (stop - first, dim).

        The sum points the same way as the mean, and cosine ignores length. Only the vocabulary rows that
        occur are read, so a memory-mapped GoogleNews file is never copied whole.
        """
        import scipy.sparse  # here: 0.1 s of imports that processes without this metric skip

        matrix = vectors.keyed_vectors.vectors  # type: ignore[attr-defined]
        ids = self.vector_ids[self.starts[first] : self.starts[stop]]
        rows = np.repeat(np.arange(stop - first), np.diff(self.starts[first : stop + 1]))
        known = ids >= 0
        ids, rows = ids[known], rows[known]
        # the vectors of these rows, in order, numbered locally without sorting the tokens
        present = np.zeros(len(self.used), dtype=bool)
        present[ids] = True
        local_used = np.flatnonzero(present)
        local = np.empty(len(self.used), dtype=np.int64)
        local[local_used] = np.arange(len(local_used))
        # a row's known tokens, in text order, as one CSR row (a repeated word is added once per occurrence)
        indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=stop - first))))
        counts = scipy.sparse.csr_matrix((np.ones(len(ids)), local[ids], indptr), shape=(stop - first, len(local_used)))
        return np.asarray(counts @ np.asarray(matrix[self.used[local_used]], dtype=np.float64))
