"""Every metric of `--compat chateval-2019` against an independent re-implementation of the original ChatEval code.

The original site (github.com/chateval/evaluation, auto.py; the NCM numbers from Chatbot_evaluation/amt_eval/
run_auto_eval.py) tokenised differently per metric; scripts/original_chateval.py restates it, written from its
description and not imported from the toolkit (scripts/bench_metrics.py runs the same code as its baseline):

- distinct-1 / distinct-2: `line.split(" ")` (no strip: double, leading and trailing spaces give empty tokens;
  a tab is part of a token); bigrams within a line; both divided by the number of such tokens.
- average length: `line.strip().split()`, i.e. runs of any whitespace, empty tokens never counted; total / lines.
- BLEU-2: NLTK sentence_bleu, weights (.5, .5), `lower().split()` tokens, mean over prompts.
- embedding average: `line.strip().split(" ")` tokens, summed known vectors, cosine; a prompt whose reference
  has no known token is skipped, a response with no known token scores 0.
"""

from __future__ import annotations

import numpy as np
import pytest
from gensim.models import KeyedVectors
from original_chateval import (
    original_avg_len,
    original_bleu2,
    original_distinct_1,
    original_distinct_2,
    original_embedding_average,
)

from evaluation.metrics import MetricInputs, create
from evaluation.metrics.compat import COMPAT
from tests.test_compat_chateval import NCM_SYSTEMS, read_lines

# Lines that the tokenisations disagree on: double, leading and trailing spaces, tabs, empty lines, "\r".
SYNTHETIC = [
    "hello  world",
    "  leading spaces",
    "trailing spaces  ",
    "tab\tseparated words",
    "trailing tab\t",
    "",
    "   ",
    "a a a  a",
    "\tthe cat sat on the mat\t",
    "windows line\r",
    "Mixed CASE case",
]
SYNTHETIC_REFERENCES = [
    "hello there world",
    "leading",
    "spaces trailing",
    "tab separated",
    "tab",
    "nothing known zzz",
    "empty",
    "a",
    "the cat  sat",
    "line",
    "case",
]


def vectors_for(texts: list[str], folder) -> str:
    """Random vectors for the single-space tokens of `texts` (empty and tab-holding tokens excluded, as in
    GloVe), saved as a word2vec text file; the original code's `in w2v` test is then a key lookup."""
    vocabulary = sorted({t for text in texts for t in text.strip().split(" ") if t and not any(c.isspace() for c in t)})
    kv = KeyedVectors(vector_size=8)
    rng = np.random.default_rng(7)
    kv.add_vectors(vocabulary, rng.normal(size=(len(vocabulary), 8)).astype(np.float32))
    path = folder / "vectors.txt"
    kv.save_word2vec_format(str(path), binary=False)
    return str(path)


def compat_result(spec: str, responses: list[str], references: list[list[str]], vectors: str | None = None):
    overrides = {family: dict(values) for family, values in COMPAT["chateval-2019"].items()}
    if vectors:
        overrides["embedding-average"]["vectors"] = vectors
    return create(spec, overrides).compute(MetricInputs(responses=responses, references=references))


def check_every_metric(responses: list[str], references: list[list[str]], single_reference: list[str], tmp_path):
    assert compat_result("distinct-1", responses, references).corpus == pytest.approx(
        original_distinct_1(responses), abs=1e-12
    )
    assert compat_result("distinct-2", responses, references).corpus == pytest.approx(
        original_distinct_2(responses), abs=1e-12
    )
    mean_length, lengths = original_avg_len(responses)
    length = compat_result("avg-length", responses, references)
    assert length.per_prompt == lengths
    assert length.corpus == pytest.approx(mean_length, abs=1e-12)
    assert compat_result("bleu-2", responses, references).corpus == pytest.approx(
        original_bleu2(responses, references), abs=1e-9
    )
    vectors = vectors_for(responses + single_reference, tmp_path)
    kv = KeyedVectors.load_word2vec_format(vectors, binary=False)
    embedding = compat_result("embedding-average", responses, [[r] for r in single_reference], vectors)
    assert embedding.corpus == pytest.approx(original_embedding_average(single_reference, responses, kv), abs=1e-6)


def test_synthetic_whitespace_every_metric(tmp_path):
    check_every_metric(SYNTHETIC, [[r] for r in SYNTHETIC_REFERENCES], SYNTHETIC_REFERENCES, tmp_path)


def test_avg_length_ignores_empty_tokens():
    # the original avg_len counted `strip().split()` tokens: 2 + 2 + 2 + 3 + 2 + 0 + 0 + 4 + 6 + 2 + 3 = 26
    result = compat_result("avg-length", SYNTHETIC, [[r] for r in SYNTHETIC_REFERENCES])
    assert result.per_prompt == [2, 2, 2, 3, 2, 0, 0, 4, 6, 2, 3]
    assert result.corpus == pytest.approx(26 / 11)


@pytest.mark.parametrize("system", NCM_SYSTEMS)
def test_real_ncm_every_metric(shared_data, tmp_path, system):
    responses = read_lines(shared_data / "responses" / f"ncm__{system}.txt")
    columns = [read_lines(shared_data / "references" / f"ncm_human_{k}.txt") for k in (1, 2)]
    references = [list(pair) for pair in zip(*columns, strict=True)]
    # the published NCM embedding average compared against the second human reference alone
    check_every_metric(responses, references, columns[1], tmp_path)
