"""The CLI runs end to end on the shipped dataset."""


def test_evaluate_shipped_dataset_prints_every_default_metric(run_cli, hub_open, tmp_path):
    responses = tmp_path / "responses.txt"
    responses.write_text("\n".join(p.references[0] for p in hub_open.prompts) + "\n", encoding="utf-8")
    result = run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses)
    assert result.exit_code == 0, result.stderr
    for name in ("distinct-1", "distinct-2", "avg-length", "bleu-2"):
        assert name in result.stdout
    assert "no word vectors configured" in result.stdout


def test_progress_bar_goes_to_stderr_and_leaves_json_clean(run_cli, hub_open, tmp_path):
    import json

    responses = tmp_path / "responses.txt"
    responses.write_text("\n".join(p.references[1] for p in hub_open.prompts) + "\n", encoding="utf-8")
    args = ["evaluate", "--dataset", "hub-open-v1", "--responses", responses, "--metrics", "bleu-2,distinct-1"]
    result = run_cli(*args, "--json", "--progress")
    assert result.exit_code == 0, result.stderr
    assert "bleu-2" in result.stderr and "distinct-1" in result.stderr
    report = json.loads(result.stdout)
    assert [m["metric"] for m in report["metrics"]] == ["bleu-2", "distinct-1"]
    assert len(report["metrics"][0]["per_prompt"]) == len(hub_open) == len(report["prompt_ids"])


def test_a_plugin_metric_runs_by_default_without_being_named(run_cli, hub_open, tmp_path):
    from evaluation.metrics import registry

    plugin = tmp_path / "qrate.py"
    plugin.write_text(
        "from evaluation.metrics import metric\n\n"
        '@metric("question-rate-smoke", version="1", description="share of questions")\n'
        "def question_rate(*, responses):\n"
        '    return [1.0 if r.rstrip().endswith("?") else 0.0 for r in responses]\n',
        encoding="utf-8",
    )
    responses = tmp_path / "responses.txt"
    responses.write_text("\n".join(["why?"] * 30 + ["fine."] * (len(hub_open) - 30)) + "\n", encoding="utf-8")
    try:
        result = run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses, "--plugin", plugin, "--json")
    finally:
        registry._FAMILIES.pop("question-rate-smoke", None)
    assert result.exit_code == 0, result.stderr
    import json

    metrics = {m["metric"]: m for m in json.loads(result.stdout)["metrics"]}
    assert metrics["question-rate-smoke"]["corpus"] == 30 / len(hub_open)
    assert "bleu-2" in metrics  # the built-in defaults still run
