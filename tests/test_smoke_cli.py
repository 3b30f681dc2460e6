"""The CLI runs end to end on the shipped dataset."""


def test_evaluate_shipped_dataset_prints_every_default_metric(run_cli, hub_open, tmp_path):
    responses = tmp_path / "responses.txt"
    responses.write_text("\n".join(p.references[0] for p in hub_open.prompts) + "\n", encoding="utf-8")
    result = run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses)
    assert result.exit_code == 0, result.stderr
    for name in ("distinct-1", "distinct-2", "avg-length", "bleu-2"):
        assert name in result.stdout
    assert "no word vectors configured" in result.stdout
