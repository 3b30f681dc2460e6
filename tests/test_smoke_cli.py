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
