"""`chateval irt fit` end to end: ratings export in, table and JSON out, bad files refused with file and line."""

from __future__ import annotations

import json

import pytest
from simulate_ratings import simulate, write_ratings


@pytest.fixture(scope="module")
def simulated():
    return simulate(3000, 5, 50, n_raters=20, auto_tie_share=0.02, seed=11)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_fit_writes_json_and_prints_table(run_cli, tmp_path, simulated, suffix):
    judgements, truth = simulated
    ratings = tmp_path / f"ratings{suffix}"
    write_ratings(judgements, ratings)
    out = tmp_path / "report.json"
    result = run_cli("irt", "fit", "--ratings", ratings, "--bootstrap", "20", "--seed", "3", "--out", out)
    assert result.exit_code == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["signature"]["bootstrap"] == 20 and report["signature"]["seed"] == 3
    assert report["n_judgements"] + report["n_auto_ties"] == len(judgements)
    assert report["n_auto_ties"] == int(judgements.auto_tie.sum())
    best_true = judgements.systems[int(truth.abilities.argmax())]
    assert report["systems"][0]["system"] == best_true
    for row in report["systems"]:
        assert row["system"] in result.stdout
    assert "most discriminating prompts" in result.stdout
    assert report["most_discriminating"][0]["prompt"] in result.stdout
    assert "bootstrap" in result.stderr  # the progress bar goes to stderr


def test_rater_terms_and_anchor(run_cli, tmp_path, simulated):
    judgements, _ = simulated
    ratings = tmp_path / "ratings.jsonl"
    write_ratings(judgements, ratings)
    out = tmp_path / "report.json"
    args = ["--bootstrap", "10", "--rater-terms", "--anchor", "sys002", "--no-progress", "--out", out]
    result = run_cli("irt", "fit", "--ratings", ratings, *args)
    assert result.exit_code == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["anchor"] == "sys002" and report["signature"]["rater_terms"] is True
    assert len(report["raters"]) == len(judgements.raters)
    assert result.stderr == ""


def test_bad_row_exits_3_with_file_and_line(run_cli, tmp_path, simulated):
    judgements, _ = simulated
    ratings = tmp_path / "ratings.jsonl"
    write_ratings(judgements.subset(slice(0, 5)), ratings)
    lines = ratings.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace('"outcome": "', '"outcome": "maybe-')
    ratings.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("irt", "fit", "--ratings", ratings)
    assert result.exit_code == 3
    assert f"{ratings}, line 4" in result.stderr and "unknown outcome" in result.stderr


def test_unknown_anchor_and_missing_file(run_cli, tmp_path, simulated):
    judgements, _ = simulated
    ratings = tmp_path / "ratings.csv"
    write_ratings(judgements, ratings)
    result = run_cli("irt", "fit", "--ratings", ratings, "--anchor", "nobody", "--no-progress")
    assert result.exit_code == 3 and "anchor 'nobody' is not among the judged systems" in result.stderr
    result = run_cli("irt", "fit", "--ratings", tmp_path / "absent.csv")
    assert result.exit_code == 4 and "file not found" in result.stderr


def test_one_dataset_of_several_keeps_bare_prompt_ids(run_cli, tmp_path, simulated):
    """Like the hub's fit (qualify_prompts=False), `--dataset` labels prompts by their ids, not "dataset/id"."""
    judgements, _ = simulated
    single = tmp_path / "single.jsonl"
    write_ratings(judgements, single)
    header, *rows = single.read_text(encoding="utf-8").splitlines()
    records = [json.loads(row) for row in rows]
    other = [{**record, "dataset": "other"} for record in records[:100]]
    several = tmp_path / "several.jsonl"
    lines = [header] + [json.dumps({**record, "dataset": "main"}) for record in records]
    lines += [json.dumps(record) for record in other]
    several.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["--bootstrap", "5", "--no-progress"]
    result = run_cli("irt", "fit", "--ratings", several, "--dataset", "main", *args, "--out", tmp_path / "main.json")
    assert result.exit_code == 0, result.stderr
    result = run_cli("irt", "fit", "--ratings", single, *args, "--out", tmp_path / "single.json")
    assert result.exit_code == 0, result.stderr
    main, alone = (json.loads((tmp_path / f"{n}.json").read_text(encoding="utf-8")) for n in ("main", "single"))
    assert {row["prompt"] for row in main["prompts"]} == {str(r["prompt_id"]) for r in records}
    assert main["prompts"] == alone["prompts"]


def test_votes_csv_needs_a_dataset_choice(run_cli, shared_data, tmp_path):
    votes = shared_data / "votes.csv"
    result = run_cli("irt", "fit", "--ratings", votes, "--votes-csv")
    assert result.exit_code == 3 and "choose one with --dataset" in result.stderr
    out = tmp_path / "ncm.json"
    args = ["--votes-csv", "--dataset", "NCM", "--bootstrap", "20", "--no-progress", "--out", out]
    result = run_cli("irt", "fit", "--ratings", votes, *args)
    assert result.exit_code == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert len(report["systems"]) == 10 and report["prompts"][0]["prompt"].startswith("NCM/")
