"""`--compat chateval-2019` reproduces the original ChatEval site's numbers on the real NCM data.

Golden values are computed here, independently of the toolkit: distinct-n by counting Python sets over
`line.split(" ")` tokens (as the original site did), and BLEU-2 with NLTK's `sentence_bleu` exactly as the
original site called it (weights (.5, .5), lower-cased whitespace tokens, no smoothing, 0-1 scale)."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import pytest
from nltk.translate.bleu_score import sentence_bleu

from evaluation.errors import NotFoundError
from evaluation.evaluate import evaluate
from evaluation.metrics.compat import COMPAT

NCM_SYSTEMS = ("cakechat", "ncm_original", "opennmt_seq2seq", "parlai_seq2seq_personachat")


def read_lines(path: Path) -> list[str]:
    """One line per prompt: split on "\\n" (a trailing "\\r" dropped), the final newline optional."""
    text = path.read_bytes().decode("utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    return [line.removesuffix("\r") for line in text.split("\n")]


def original_distinct(lines: list[str]) -> tuple[float, float, list[float], list[float]]:
    """distinct-1 = |unique tokens| / |tokens|; distinct-2 = |unique within-line bigrams| / |tokens|."""
    unigrams: set[str] = set()
    bigrams: set[tuple[str, str]] = set()
    total = 0
    per_1, per_2 = [], []
    for line in lines:
        tokens = line.split(" ")
        pairs = list(itertools.pairwise(tokens))
        unigrams.update(tokens)
        bigrams.update(pairs)
        total += len(tokens)
        per_1.append(len(set(tokens)) / len(tokens))
        per_2.append(len(set(pairs)) / len(tokens))
    return len(unigrams) / total, len(bigrams) / total, per_1, per_2


def nltk_bleu2(responses: list[str], references: list[list[str]]) -> list[float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns about zero n-gram counts without smoothing
        return [
            sentence_bleu([r.lower().split() for r in refs], hyp.lower().split(), weights=(0.5, 0.5))
            for hyp, refs in zip(responses, references, strict=True)
        ]


@pytest.fixture
def ncm_references(shared_data, ncm_dataset) -> list[list[str]]:
    columns = [read_lines(shared_data / "references" / f"ncm_human_{k}.txt") for k in (1, 2)]
    references = [list(pair) for pair in zip(*columns, strict=True)]
    assert len(references) == 200
    # the imported dataset holds the same references, in the same order
    assert [list(refs) for refs in ncm_dataset.references] == references
    return references


def by_name(report) -> dict:
    return {o.metric: o for o in report.outcomes}


@pytest.mark.parametrize("system", NCM_SYSTEMS)
def test_distinct_equals_original_count(shared_data, ncm_dataset, system):
    responses = read_lines(shared_data / "responses" / f"ncm__{system}.txt")
    assert len(responses) == 200
    d1, d2, per_1, per_2 = original_distinct(responses)
    report = evaluate(
        ncm_dataset, responses, metrics=["distinct-1", "distinct-2", "avg-length"], compat="chateval-2019"
    )
    results = {name: outcome.result for name, outcome in by_name(report).items()}
    assert results["distinct-1"].corpus == pytest.approx(d1, abs=1e-12)
    assert results["distinct-2"].corpus == pytest.approx(d2, abs=1e-12)
    assert results["distinct-1"].per_prompt == pytest.approx(per_1, abs=1e-12)
    assert results["distinct-2"].per_prompt == pytest.approx(per_2, abs=1e-12)
    assert "tokenizer=single-space" in results["distinct-1"].signature
    lengths = [len(line.strip().split()) for line in responses]  # the original avg_len: any whitespace run
    assert results["avg-length"].per_prompt == lengths
    assert results["avg-length"].corpus == pytest.approx(sum(lengths) / 200, abs=1e-12)


@pytest.mark.parametrize("system", NCM_SYSTEMS)
def test_bleu2_equals_nltk_sentence_bleu(shared_data, ncm_dataset, ncm_references, system):
    responses = read_lines(shared_data / "responses" / f"ncm__{system}.txt")
    expected = nltk_bleu2(responses, ncm_references)
    assert any(value > 0 for value in expected)
    result = by_name(evaluate(ncm_dataset, responses, metrics=["bleu-2"], compat="chateval-2019"))["bleu-2"].result
    assert len(result.per_prompt) == 200
    for i, (got, want) in enumerate(zip(result.per_prompt, expected, strict=True)):
        assert got == pytest.approx(want, abs=1e-9), f"prompt {i}: {responses[i]!r} vs {ncm_references[i]!r}"
    assert result.corpus == pytest.approx(sum(expected) / len(expected), abs=1e-9)
    assert 0.0 <= result.corpus <= 1.0  # NLTK's 0-1 scale, not sacrebleu's 0-100


@pytest.mark.parametrize("system", NCM_SYSTEMS)
def test_cli_compat_json(run_cli, shared_data, ncm_dataset, ncm_references, system):
    path = shared_data / "responses" / f"ncm__{system}.txt"
    responses = read_lines(path)
    # --allow-empty: the original opennmt_seq2seq file has one empty response (line 178)
    compat = ("--compat", "chateval-2019", "--json", "--allow-empty")
    result = run_cli("evaluate", "--dataset", ncm_dataset.path, "--responses", path, *compat)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["prompts"] == 200
    assert report["prompt_ids"] == [str(i) for i in range(200)]
    metrics = {m["metric"]: m for m in report["metrics"]}
    d1, d2, per_1, per_2 = original_distinct(responses)
    assert metrics["distinct-1"]["corpus"] == pytest.approx(d1, abs=1e-12)
    assert metrics["distinct-2"]["corpus"] == pytest.approx(d2, abs=1e-12)
    assert metrics["distinct-1"]["per_prompt"] == pytest.approx(per_1, abs=1e-12)
    assert metrics["distinct-2"]["per_prompt"] == pytest.approx(per_2, abs=1e-12)
    expected_bleu = nltk_bleu2(responses, ncm_references)
    assert metrics["bleu-2"]["per_prompt"] == pytest.approx(expected_bleu, abs=1e-9)
    assert metrics["bleu-2"]["corpus"] == pytest.approx(sum(expected_bleu) / 200, abs=1e-9)
    assert "scale=1.0" in metrics["bleu-2"]["signature"]
    # defaults that need inputs not given here are reported, not silently dropped
    assert "no word vectors configured" in metrics["embedding-average"]["unavailable"]
    assert "unavailable" in metrics["perplexity"]


def test_compat_differs_from_default_configuration(shared_data, ncm_dataset):
    # ncm_original ends its lines with "\r\n" and uses plain tokens; the default 13a tokenizer splits
    # punctuation and scores BLEU on 0-100, so the two configurations must not agree.
    responses = read_lines(shared_data / "responses" / "ncm__ncm_original.txt")
    compat = by_name(evaluate(ncm_dataset, responses, metrics=["bleu-2"], compat="chateval-2019"))
    default = by_name(evaluate(ncm_dataset, responses, metrics=["bleu-2"]))
    assert compat["bleu-2"].result.signature != default["bleu-2"].result.signature
    assert default["bleu-2"].result.corpus > 1.0


def test_unknown_compat_name(ncm_dataset, run_cli, shared_data):
    with pytest.raises(NotFoundError, match="chateval-2019"):
        evaluate(ncm_dataset, ["x"] * 200, compat="chateval-1999")
    result = run_cli(
        "evaluate", "--dataset", ncm_dataset.path, "--responses", shared_data / "responses" / "ncm__cakechat.txt",
        "--compat", "chateval-1999",
    )  # fmt: skip
    assert result.exit_code == 4


def test_compat_table_is_documented():
    assert set(COMPAT) >= {"chateval-2019"}
    assert COMPAT["chateval-2019"]["distinct"]["tokenizer"] == "single-space"
