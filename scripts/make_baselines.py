"""Regenerate the baseline files in baselines/ from the shipped datasets (deterministic; no downloads).

- echo: answers every prompt with the user's last turn, verbatim. A floor that any system should beat on
  BLEU and embedding similarity, and a sanity check for distinct-n.
- retrieval: nearest-neighbour retrieval, leave-one-out: finds the most similar *other* prompt of the same set
  (TF-IDF cosine over its last user turn) and answers with that prompt's first reference. The corpus is the
  set's own references, which the project ships; a prompt's own references are never used for itself.
- unigram: an add-one-smoothed unigram language model fitted on the dataset's context turns (never the
  references). Its responses are its most probable words (the same short answer to every prompt: a floor for
  every metric); its log-likelihood file holds the natural-log probability it gives each prompt's first
  reference and that reference's token count, which the perplexity metric reads.
Usage: python scripts/make_baselines.py [DATASET ...]   (default: hub-open-v1)
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from evaluation.dataset import Dataset, load_dataset
from evaluation.tokenize import tokenize_all

BASELINES = Path(__file__).resolve().parent.parent / "baselines"


def echo_responses(dataset: Dataset) -> list[str]:
    return [" ".join(prompt.context[-1].content.split()) for prompt in dataset.prompts]


def retrieval_responses(dataset: Dataset) -> list[str]:
    queries = tokenize_all([prompt.context[-1].content for prompt in dataset.prompts], "13a", True)
    vocabulary = {token: i for i, token in enumerate(sorted({t for tokens in queries for t in tokens}))}
    counts = np.zeros((len(queries), len(vocabulary)))
    for row, tokens in enumerate(queries):
        for token in tokens:
            counts[row, vocabulary[token]] += 1
    idf = np.log((1 + len(queries)) / (1 + (counts > 0).sum(axis=0))) + 1
    tfidf = counts * idf
    tfidf /= np.maximum(np.linalg.norm(tfidf, axis=1, keepdims=True), 1e-12)
    similarity = tfidf @ tfidf.T
    np.fill_diagonal(similarity, -np.inf)  # leave one out: never answer with the prompt's own reference
    nearest = similarity.argmax(axis=1)  # ties: the earliest prompt, so the output is deterministic
    return [dataset.prompts[j].references[0] for j in nearest]


def unigram_counts(dataset: Dataset) -> Counter:
    contexts = [turn.content for prompt in dataset.prompts for turn in prompt.context]
    return Counter(token for tokens in tokenize_all(contexts, "13a", True) for token in tokens)


def unigram_responses(dataset: Dataset, words: int = 6) -> list[str]:
    answer = " ".join(word for word, _ in unigram_counts(dataset).most_common(words))
    return [answer] * len(dataset)


def unigram_loglik(dataset: Dataset) -> list[dict]:
    counts = unigram_counts(dataset)
    total, vocabulary = sum(counts.values()), len(counts) + 1  # +1: one slot for every unseen word
    references = tokenize_all([prompt.references[0] for prompt in dataset.prompts], "13a", True)
    records = []
    for prompt, tokens in zip(dataset.prompts, references, strict=True):
        logprob = sum(math.log((counts[token] + 1) / (total + vocabulary)) for token in tokens)
        records.append({"prompt_id": prompt.id, "logprob": round(logprob, 6), "tokens": max(len(tokens), 1)})
    return records


def main(names: list[str]) -> int:
    for name in names or ["hub-open-v1"]:
        dataset = load_dataset(name)
        folder = BASELINES / dataset.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "echo.txt").write_text("\n".join(echo_responses(dataset)) + "\n", encoding="utf-8")
        (folder / "unigram.txt").write_text("\n".join(unigram_responses(dataset)) + "\n", encoding="utf-8")
        (folder / "retrieval.txt").write_text("\n".join(retrieval_responses(dataset)) + "\n", encoding="utf-8")
        with (folder / "unigram.loglik.jsonl").open("w", encoding="utf-8") as handle:
            for record in unigram_loglik(dataset):
                handle.write(json.dumps(record) + "\n")
        print(f"wrote baselines for {dataset.fingerprint} into {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
