"""Regenerate the baseline files in baselines/ from the shipped datasets (deterministic; no downloads).

- echo: answers every prompt with the user's last turn, verbatim. A floor that any system should beat on
  BLEU and embedding similarity, and a sanity check for distinct-n.
- unigram: an add-one-smoothed unigram language model fitted on the dataset's context turns (never the
  references); writes the natural-log probability of each prompt's first reference and its token count,
  the log-likelihood file the perplexity metric reads.
Usage: python scripts/make_baselines.py [DATASET ...]   (default: hub-open-v1)
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

from evaluation.dataset import Dataset, load_dataset
from evaluation.tokenize import tokenize_all

BASELINES = Path(__file__).resolve().parent.parent / "baselines"


def echo_responses(dataset: Dataset) -> list[str]:
    return [" ".join(prompt.context[-1].content.split()) for prompt in dataset.prompts]


def unigram_loglik(dataset: Dataset) -> list[dict]:
    contexts = [turn.content for prompt in dataset.prompts for turn in prompt.context]
    counts = Counter(token for tokens in tokenize_all(contexts, "13a", True) for token in tokens)
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
        with (folder / "unigram.loglik.jsonl").open("w", encoding="utf-8") as handle:
            for record in unigram_loglik(dataset):
                handle.write(json.dumps(record) + "\n")
        print(f"wrote baselines for {dataset.fingerprint} into {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
