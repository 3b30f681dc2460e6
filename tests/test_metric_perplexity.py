"""perplexity = exp(-sum logprob / sum tokens), per prompt exp(-logprob / tokens), from a log-likelihood file."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evaluation.dataset import Prompt, Turn, write_dataset
from evaluation.errors import ConfigurationError
from evaluation.evaluate import evaluate
from evaluation.loglik import LogLikelihoods
from evaluation.metrics import MetricInputs, create

# logprobs -2, -4 over 1 and 3 tokens: corpus exp(6 / 4) = exp(1.5); per prompt exp(2 / 1), exp(4 / 3).
HAND_LOGPROB = [-2.0, -4.0]
HAND_TOKENS = [1, 3]
HAND_CORPUS = 4.4816890703380645  # exp(1.5)
HAND_PER_PROMPT = [7.38905609893065, 3.7936678946831774]  # exp(2), exp(4/3)


def loglik(logprob, tokens) -> LogLikelihoods:
    return LogLikelihoods(logprob=np.asarray(logprob, dtype=np.float64), tokens=np.asarray(tokens, dtype=np.int64))


def tiny_dataset(folder, n: int):
    prompts = [
        Prompt(id=f"p{i}", context=(Turn(role="user", content=f"prompt {i}"),), references=(f"reference {i}",))
        for i in range(n)
    ]
    fields = dict(name="tiny", version="1", description="", source="", license="", citation="")
    return write_dataset(folder, fields, prompts)


def test_hand_example():
    metric = create("perplexity")
    result = metric.compute(
        MetricInputs(responses=["x", "y"], references=[["r"], ["r"]], loglik=loglik(HAND_LOGPROB, HAND_TOKENS))
    )
    assert result.corpus == pytest.approx(HAND_CORPUS, rel=1e-12)
    assert result.per_prompt == pytest.approx(HAND_PER_PROMPT, rel=1e-12)
    assert result.details["total_tokens"] == 4
    assert result.higher_is_better is False
    assert result.signature == "perplexity|v1|source=submitted-reference-loglik"


def test_corpus_is_token_weighted_not_mean_of_prompts():
    # the mean of the per-prompt values would be (e^2 + e^(4/3)) / 2 = 5.59..., not e^1.5 = 4.48...
    result = create("perplexity").compute(
        MetricInputs(responses=["x", "y"], references=[["r"], ["r"]], loglik=loglik(HAND_LOGPROB, HAND_TOKENS))
    )
    assert result.corpus != pytest.approx(sum(HAND_PER_PROMPT) / 2)


def test_zero_logprob_gives_perplexity_one():
    # log p = 0 over 5 tokens: exp(0) = 1.
    result = create("perplexity").compute(MetricInputs(responses=["x"], references=[["r"]], loglik=loglik([0.0], [5])))
    assert result.corpus == 1.0
    assert result.per_prompt == [1.0]


def test_missing_loglik_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="--loglik"):
        create("perplexity").compute(MetricInputs(responses=["x"], references=[["r"]]))


def test_evaluate_defaults_without_loglik_report_unavailable(tmp_path):
    data = tiny_dataset(tmp_path / "tiny", 2)
    report = evaluate(data, ["a", "b"])
    outcome = next(o for o in report.outcomes if o.metric == "perplexity")
    assert outcome.result is None
    assert "log-likelihood" in outcome.unavailable


def test_evaluate_with_loglik(tmp_path):
    data = tiny_dataset(tmp_path / "tiny", 2)
    report = evaluate(data, ["a", "b"], metrics=["perplexity"], loglik=loglik(HAND_LOGPROB, HAND_TOKENS))
    result = report.outcomes[0].result
    assert result.corpus == pytest.approx(HAND_CORPUS, rel=1e-12)
    assert result.per_prompt == pytest.approx(HAND_PER_PROMPT, rel=1e-12)


def test_cli_loglik_jsonl(run_cli, tmp_path):
    data = tiny_dataset(tmp_path / "tiny", 3)
    responses = tmp_path / "responses.txt"
    responses.write_text("a\nb\nc\n", encoding="utf-8")
    # out of order on purpose: records are matched by prompt_id.
    # logprobs -3, -2, -4 over 3, 1, 3 tokens: corpus exp(9 / 7); per prompt exp(1), exp(2), exp(4/3).
    records = [
        {"prompt_id": "p2", "logprob": -4.0, "tokens": 3},
        {"prompt_id": "p0", "logprob": -3, "tokens": 3},
        {"prompt_id": "p1", "logprob": -2.0, "tokens": 1},
    ]
    loglik_path = tmp_path / "loglik.jsonl"
    loglik_path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = run_cli(
        "evaluate", "--dataset", data.path, "--responses", responses, "--loglik", loglik_path, "--metrics",
        "perplexity", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    (metric,) = report["metrics"]
    assert metric["metric"] == "perplexity"
    assert metric["corpus"] == pytest.approx(math.exp(9 / 7), rel=1e-12)  # 3.6172...
    assert metric["per_prompt"] == pytest.approx([math.e, 7.38905609893065, 3.7936678946831774], rel=1e-12)
    assert metric["details"] == {"total_tokens": 7}
    assert report["prompt_ids"] == ["p0", "p1", "p2"]


def test_cli_default_metrics_include_perplexity_when_loglik_given(run_cli, tmp_path):
    data = tiny_dataset(tmp_path / "tiny", 2)
    responses = tmp_path / "responses.txt"
    responses.write_text("a\nb\n", encoding="utf-8")
    loglik_path = tmp_path / "loglik.jsonl"
    loglik_path.write_text(
        '{"prompt_id": "p0", "logprob": -2, "tokens": 1}\n{"prompt_id": "p1", "logprob": -4, "tokens": 3}\n'
    )
    result = run_cli("evaluate", "--dataset", data.path, "--responses", responses, "--loglik", loglik_path, "--json")
    assert result.exit_code == 0, result.stderr
    metrics = {m["metric"]: m for m in json.loads(result.stdout)["metrics"]}
    assert metrics["perplexity"]["corpus"] == pytest.approx(HAND_CORPUS, rel=1e-12)
    assert metrics["perplexity"]["higher_is_better"] is False


@pytest.mark.parametrize(
    "line",
    [
        '{"prompt_id": "p0", "logprob": 2, "tokens": 1}',  # a positive log-probability
        '{"prompt_id": "p0", "logprob": -2, "tokens": 0}',  # no tokens
        '{"prompt_id": "p0", "logprob": -2}',  # missing key
    ],
)
def test_cli_refuses_bad_loglik(run_cli, tmp_path, line):
    data = tiny_dataset(tmp_path / "tiny", 1)
    responses = tmp_path / "responses.txt"
    responses.write_text("a\n", encoding="utf-8")
    loglik_path = tmp_path / "loglik.jsonl"
    loglik_path.write_text(line + "\n")
    result = run_cli("evaluate", "--dataset", data.path, "--responses", responses, "--loglik", loglik_path)
    assert result.exit_code == 3
    # rich wraps stderr at 80 columns when it is not a terminal, so compare without the line breaks
    assert "loglik.jsonl,line1:" in result.stderr.replace("\n", "").replace(" ", "")
