"""Benchmark: all metrics on a 100,000-response synthetic file vs a straightforward per-sentence loop.

Prints per-metric throughput, the speed-up over the reference loop measured in the same run, the largest
difference between the two (must be <= 1e-9) and peak memory. Usage: python scripts/bench_metrics.py [--size N]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evaluation.dataset import load_dataset_dir
from evaluation.embeddings import load_vectors
from evaluation.evaluate import evaluate
from evaluation.loglik import read_loglik
from evaluation.responses import read_responses
from evaluation.tokenize import get_tokenizer

METRICS = ["distinct-1", "distinct-2", "avg-length", "bleu-2", "embedding-average", "perplexity"]
TOLERANCE = 1e-9


def zipf_words(rng: np.random.Generator, vocab: list[str], count: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.3, size=count), len(vocab)) - 1
    return [vocab[r] for r in ranks]


def sentence(rng: np.random.Generator, vocab: list[str]) -> str:
    length = int(np.clip(rng.lognormal(2.2, 0.55), 1, 60))  # median ~9 words, long tail as in chat data
    words = zipf_words(rng, vocab, length)
    return " ".join(words) + rng.choice([" .", " ?", " !", ""])


def build_inputs(folder: Path, size: int, dims: int, seed: int = 13) -> dict[str, Path]:
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(30_000)]
    dataset = folder / "synthetic"
    dataset.mkdir()
    with (dataset / "prompts.jsonl").open("w") as handle:
        for i in range(size):
            record = {
                "id": str(i),
                "context": [{"role": "user", "content": sentence(rng, vocab)}],
                "references": [sentence(rng, vocab), sentence(rng, vocab)],
            }
            handle.write(json.dumps(record) + "\n")
    from evaluation.dataset import sha256_file

    manifest = dict(name="synthetic", version="1", description="", source="", license="", citation="")
    manifest["prompts_sha256"] = sha256_file(dataset / "prompts.jsonl")
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    responses = folder / "responses.txt"
    responses.write_text("\n".join(sentence(rng, vocab) for _ in range(size)) + "\n")
    loglik = folder / "loglik.jsonl"
    with loglik.open("w") as handle:
        for i in range(size):
            tokens = int(rng.integers(1, 30))
            handle.write(
                json.dumps({"prompt_id": str(i), "logprob": -float(rng.gamma(4, 0.8)) * tokens, "tokens": tokens})
            )
            handle.write("\n")
    # 300-d vectors for 80% of the vocabulary (the rest is out of vocabulary), in gensim's mmap format.
    keyed = KeyedVectors(vector_size=dims)
    known = vocab[: int(len(vocab) * 0.8)]
    keyed.add_vectors(known, rng.standard_normal((len(known), dims)).astype(np.float32))
    vectors = folder / "vectors.kv"
    keyed.save(str(vectors), separately=["vectors"])
    return {"dataset": dataset, "responses": responses, "loglik": loglik, "vectors": vectors}


def reference_scores(metric: str, responses, references, loglik, keyed) -> list[float | None]:
    """The straightforward way: one sentence at a time, plain Python and per-line library calls."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

    # Each reference metric tokenises afresh, as a per-sentence script would; sacrebleu's own line cache
    # would otherwise be warm from the previous run.
    Tokenizer13a.__call__.cache_clear()
    TokenizerRegexp.__call__.cache_clear()
    tokenize = get_tokenizer("13a")
    if metric.startswith("distinct"):
        n = int(metric.split("-")[1])
        seen, total, per_prompt = set(), 0, []
        for text in responses:
            tokens = tokenize(text)
            grams = set(zip(*(tokens[i:] for i in range(n)), strict=False))
            seen |= grams
            total += len(tokens)
            per_prompt.append(len(grams) / len(tokens) if tokens else 0.0)
        return [len(seen) / total, *per_prompt]
    if metric == "avg-length":
        lengths = [len(tokenize(text)) for text in responses]
        return [sum(lengths) / len(lengths), *lengths]
    if metric == "bleu-2":
        from sacrebleu.metrics.bleu import BLEU

        bleu = BLEU(max_ngram_order=2, effective_order=True, smooth_method="exp")
        scores = [bleu.sentence_score(h, list(r)).score for h, r in zip(responses, references, strict=True)]
        return [sum(scores) / len(scores), *scores]
    if metric == "embedding-average":
        index = keyed.key_to_index

        def mean_vector(text):
            ids = [index[t] for t in tokenize(text) if t in index]
            return keyed.vectors[ids].astype(np.float64).sum(axis=0) if ids else None

        def cosine(a, b):
            norm = float(np.linalg.norm(a) * np.linalg.norm(b))
            return float(a @ b) / norm if norm > 0 else 0.0

        per_prompt = []
        for text, refs in zip(responses, references, strict=True):
            response = mean_vector(text)
            ref_vectors = [v for v in (mean_vector(r) for r in refs) if v is not None]
            if not ref_vectors:
                per_prompt.append(None)
            elif response is None:
                per_prompt.append(0.0)
            else:
                per_prompt.append(max(cosine(response, v) for v in ref_vectors))
        scored = [v for v in per_prompt if v is not None]
        return [sum(scored) / len(scored), *per_prompt]
    if metric == "perplexity":
        per_prompt = [math.exp(-lp / t) for lp, t in zip(loglik.logprob.tolist(), loglik.tokens.tolist(), strict=True)]
        return [math.exp(-sum(loglik.logprob.tolist()) / sum(loglik.tokens.tolist())), *per_prompt]
    raise ValueError(metric)


def max_difference(ours: list, theirs: list) -> float:
    """Largest difference, relative for values above 1 (perplexities reach the thousands)."""
    worst = 0.0
    for a, b in zip(ours, theirs, strict=True):
        if (a is None) != (b is None):
            return math.inf
        if a is not None:
            worst = max(worst, abs(a - b) / max(1.0, abs(b)))
    return worst


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        paths = build_inputs(Path(scratch), args.size, args.dims)
        print(
            f"generated {args.size:,} responses, 2 references each, {args.dims}-d vectors "
            f"in {time.perf_counter() - started:.1f} s"
        )
        dataset = load_dataset_dir(paths["dataset"])
        started = time.perf_counter()
        responses = read_responses(paths["responses"], dataset=dataset)
        loglik = read_loglik(paths["loglik"], dataset=dataset)
        vectors = load_vectors(paths["vectors"])
        print(f"validated response and log-likelihood files in {time.perf_counter() - started:.2f} s")
        rss_before = peak_rss_mb()

        ours: dict[str, tuple[float, list]] = {}
        total_started = time.perf_counter()
        for name in METRICS:
            started = time.perf_counter()
            report = evaluate(dataset, responses, metrics=[name], embeddings=str(paths["vectors"]), loglik=loglik)
            result = report.outcomes[0].result
            ours[name] = (time.perf_counter() - started, [result.corpus, *result.per_prompt])
        toolkit_total = time.perf_counter() - total_started
        rss_after = peak_rss_mb()

        print(f"\n{'metric':<18}{'toolkit s':>10}{'lines/s':>12}{'reference s':>13}{'speed-up':>10}{'max |diff|':>12}")
        reference_total, worst = 0.0, 0.0
        for name in METRICS:
            started = time.perf_counter()
            theirs = reference_scores(name, responses, dataset.references, loglik, vectors.keyed_vectors)
            elapsed = time.perf_counter() - started
            reference_total += elapsed
            seconds, values = ours[name]
            diff = max_difference(values, theirs)
            worst = max(worst, diff)
            print(
                f"{name:<18}{seconds:>10.2f}{args.size / seconds:>12,.0f}{elapsed:>13.2f}"
                f"{elapsed / seconds:>9.1f}x{diff:>12.1e}"
            )
        print(
            f"{'all metrics':<18}{toolkit_total:>10.2f}{args.size / toolkit_total:>12,.0f}{reference_total:>13.2f}"
            f"{reference_total / toolkit_total:>9.1f}x{worst:>12.1e}"
        )
        print(
            f"\npeak RSS: {rss_before:.0f} MB after loading inputs, {rss_after:.0f} MB after the toolkit run "
            f"(+{rss_after - rss_before:.0f} MB), {peak_rss_mb():.0f} MB after the reference loop"
        )
        ok = worst <= TOLERANCE
        print(f"values identical to the reference loop within {TOLERANCE:g}: {'yes' if ok else 'NO'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
