"""`chateval evaluate --json` on a large-ish file, as a real process: valid JSON, exactly the report's structure.

The JSON is streamed a metric at a time (no terminal formatter on the data path); whatever it is written with,
what a script parses must be `EvaluationReport.to_dict()` as the in-process evaluation gives it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench_metrics import build_inputs

from evaluation.dataset import load_dataset_dir
from evaluation.evaluate import evaluate
from evaluation.loglik import read_loglik
from evaluation.responses import read_responses

CHATEVAL = str(Path(sys.executable).parent / "chateval")
SIZE = 20_000


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    return build_inputs(tmp_path_factory.mktemp("json-output"), SIZE, dims=8)


def run_evaluate(inputs: dict[str, Path], home: Path, *extra: str) -> dict:
    args = [CHATEVAL, "evaluate", "--dataset", str(inputs["dataset"]), "--responses", str(inputs["responses"])]
    env = {**os.environ, "CHATEVAL_HOME": str(home)}
    result = subprocess.run([*args, "--json", *extra], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("}\n")
    return json.loads(result.stdout)


def expected_report(inputs: dict[str, Path], **options) -> dict:
    dataset = load_dataset_dir(inputs["dataset"])
    responses = read_responses(inputs["responses"], dataset=dataset)
    if options.pop("with_loglik", False):
        options["loglik"] = read_loglik(inputs["loglik"], dataset=dataset)
    report = evaluate(dataset, responses, **options)
    # the structure the previous output had: rich's print_json re-encoded json.dumps(report.to_dict())
    return json.loads(json.dumps(report.to_dict()))


def test_default_metrics_json_is_the_report_structure(inputs, chateval_home):
    # default metrics without vectors or log-likelihoods: results and "unavailable" entries side by side
    output = run_evaluate(inputs, chateval_home)
    assert output == expected_report(inputs)
    assert list(output) == ["dataset", "toolkit_version", "prompts", "metrics", "prompt_ids"]
    assert output["prompts"] == SIZE == len(output["prompt_ids"])
    metrics = {m["metric"]: m for m in output["metrics"]}
    assert list(metrics["bleu-2"]) == [
        "metric", "version", "signature", "corpus", "per_prompt", "higher_is_better", "details",
    ]  # fmt: skip
    assert len(metrics["bleu-2"]["per_prompt"]) == SIZE
    assert "unavailable" in metrics["embedding-average"] and "unavailable" in metrics["perplexity"]


def test_compat_json_with_every_input_is_the_report_structure(inputs, chateval_home):
    names = "distinct-1,distinct-2,avg-length,bleu-2,embedding-average,perplexity"
    extra = ["--compat", "chateval-2019", "--metrics", names, "--loglik", str(inputs["loglik"])]
    output = run_evaluate(inputs, chateval_home, *extra, "--embeddings", str(inputs["vectors"]), "--progress")
    expected = expected_report(
        inputs, metrics=names.split(","), compat="chateval-2019", embeddings=str(inputs["vectors"]), with_loglik=True
    )
    assert output == expected
    assert [m["metric"] for m in output["metrics"]] == names.split(",")
    assert all(len(m["per_prompt"]) == SIZE for m in output["metrics"])
