"""The original ChatEval per-line metric code, restated: golden values for the tests, the baseline for the benchmark.

The original site (github.com/chateval/evaluation, auto.py; the NCM numbers from Chatbot_evaluation/amt_eval/
run_auto_eval.py) tokenised differently per metric, which is what these functions restate, written from its
description and not imported from the toolkit:

- distinct-1 / distinct-2: `line.split(" ")` (no strip: double, leading and trailing spaces give empty tokens;
  a tab is part of a token); bigrams within a line; both divided by the number of such tokens.
- average length: `line.strip().split()`, i.e. runs of any whitespace, empty tokens never counted; total / lines.
- BLEU-2: NLTK sentence_bleu, weights (.5, .5), `lower().split()` tokens, mean over prompts.
- embedding average: `line.strip().split(" ")` tokens, summed known vectors, cosine; a prompt whose reference
  has no known token is skipped, a response with no known token scores 0. The original had one reference file;
  with several references a prompt scores its best reference (the toolkit's rule), each one scored as above.
- perplexity (the hub's reference log-likelihood file): exp(-sum logprob / sum tokens), a line at a time.

As a command it is the "original code" process of scripts/bench_metrics.py: it reads plain files (responses,
one reference file per reference column, word vectors, log-likelihoods) and writes every metric's corpus and
per-prompt values as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

METRICS = ("distinct-1", "distinct-2", "avg-length", "bleu-2", "embedding-average", "perplexity")


def read_lines(path: str | Path) -> list[str]:
    """One line per prompt: split on "\\n" (a trailing "\\r" dropped), the final newline optional."""
    text = Path(path).read_bytes().decode("utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    return [line.removesuffix("\r") for line in text.split("\n")]


def original_distinct_1(lines: list[str]) -> float:
    words = [w for line in lines for w in line.split(" ")]
    return len(set(words)) / len(words)


def original_distinct_2(lines: list[str]) -> float:
    bigrams, words = set(), 0
    for line in lines:
        tokens = line.split(" ")
        words += len(tokens)
        bigrams.update(itertools.pairwise(tokens))
    return len(bigrams) / words


def original_distinct(lines: list[str], n: int) -> tuple[float, list[float]]:
    """distinct-n over the file and per line (distinct n-grams of the line / its tokens), one line at a time."""
    seen: set = set()
    words = 0
    per_line = []
    for line in lines:
        tokens = line.split(" ")
        grams = set(zip(*(tokens[i:] for i in range(n)), strict=False))
        seen.update(grams)
        words += len(tokens)
        per_line.append(len(grams) / len(tokens))
    return len(seen) / words, per_line


def original_avg_len(lines: list[str]) -> tuple[float, list[int]]:
    lengths = [len(line.strip().split()) for line in lines]
    return sum(lengths) / len(lines), lengths


def original_bleu2_scores(lines: list[str], references: list[list[str]]) -> list[float]:
    from nltk.translate.bleu_score import sentence_bleu

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns about zero n-gram counts without smoothing
        return [
            sentence_bleu([r.lower().split() for r in refs], hyp.lower().split(), weights=(0.5, 0.5))
            for hyp, refs in zip(lines, references, strict=True)
        ]


def original_bleu2(lines: list[str], references: list[list[str]]) -> float:
    scores = original_bleu2_scores(lines, references)
    return sum(scores) / len(scores)


def _summed_vector(line: str, kv) -> np.ndarray:
    x = np.zeros(kv.vector_size)
    for token in line.strip().split(" "):
        if token in kv.key_to_index:
            x += kv[token]
    return x


def original_embedding_scores(references: list[list[str]], lines: list[str], kv) -> list[float | None]:
    """Per prompt the original cosine against each reference (best one kept); None where no reference counts."""
    scores: list[float | None] = []
    for refs, line in zip(references, lines, strict=True):
        y = _summed_vector(line, kv)
        best = None
        for reference in refs:
            x = _summed_vector(reference, kv)
            if np.linalg.norm(x) < 1e-11:
                continue
            score = 0.0 if np.linalg.norm(y) < 1e-11 else float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))
            best = score if best is None else max(best, score)
        scores.append(best)
    return scores


def original_embedding_average(references: list[str], lines: list[str], kv) -> float:
    scores = original_embedding_scores([[r] for r in references], lines, kv)
    return float(np.mean([s for s in scores if s is not None]))


def original_perplexity(path: str | Path) -> tuple[float, list[float]]:
    logprob, tokens, per_line = 0.0, 0, []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            logprob += record["logprob"]
            tokens += record["tokens"]
            per_line.append(math.exp(-record["logprob"] / record["tokens"]))
    return math.exp(-logprob / tokens), per_line


def _mean(values: list) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present)


def run(args: argparse.Namespace) -> dict[str, dict]:
    lines = read_lines(args.responses)
    columns = [read_lines(path) for path in args.references]
    references = [list(refs) for refs in zip(*columns, strict=True)]
    kv = None
    results: dict[str, dict] = {}
    for name in args.metrics.split(","):
        if name in ("distinct-1", "distinct-2"):
            corpus, per_prompt = original_distinct(lines, int(name[-1]))
        elif name == "avg-length":
            corpus, per_prompt = original_avg_len(lines)
        elif name == "bleu-2":
            per_prompt = original_bleu2_scores(lines, references)
            corpus = _mean(per_prompt)
        elif name == "embedding-average":
            if kv is None:
                from gensim.models import KeyedVectors

                kv = KeyedVectors.load(str(args.vectors))
            per_prompt = original_embedding_scores(references, lines, kv)
            corpus = _mean(per_prompt)
        elif name == "perplexity":
            corpus, per_prompt = original_perplexity(args.loglik)
        else:
            raise SystemExit(f"unknown metric {name!r} (known: {', '.join(METRICS)})")
        results[name] = {"corpus": corpus, "per_prompt": per_prompt}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The original ChatEval per-line metrics over plain files.")
    parser.add_argument("--responses", type=Path, required=True, help="one response per line")
    parser.add_argument("--references", type=Path, nargs="+", required=True, help="one file per reference column")
    parser.add_argument("--vectors", type=Path, help="gensim KeyedVectors file (embedding-average)")
    parser.add_argument("--loglik", type=Path, help="JSONL prompt_id, logprob, tokens (perplexity)")
    parser.add_argument("--metrics", default=",".join(METRICS), help="comma-separated")
    args = parser.parse_args(argv)
    json.dump(run(args), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
