"""scripts/analyze_ratings.py on small exports written here in both formats of the ratings contract: its
figures equal direct calls of the library on the same ratings, and bad files are named with their line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import analyze_ratings
import numpy as np
import pytest

from evaluation.agreement import agreement
from evaluation.pairwise_results import summarize
from evaluation.rater_quality import RatingRow, screen

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "analyze_ratings.py"
FIELDS = [
    "rating_id", "experiment_id", "dataset", "dataset_fingerprint", "prompt_id", "item_id", "item_kind",
    "system_a", "system_b", "system_a_id", "system_b_id", "left", "choice", "outcome", "auto_tie", "expected",
    "rater", "backend", "task_id", "assignment_id", "external_assignment_id", "created_at", "submitted_at",
    "seconds_on_task", "excluded", "exclusion_reason",
]  # fmt: skip


def choice_for(outcome: str, left: str) -> str:
    if outcome == "tie":
        return "tie"
    return "left" if outcome == left else "right"


def make_ratings(seed: int = 4) -> list[dict]:
    """Two experiments: 12 prompts x 3 of 5 raters, automatic ties, attention and repeat rows, one rater excluded."""
    rng = np.random.default_rng(seed)
    ratings: list[dict] = []

    def add(**fields):
        base = {name: None for name in FIELDS}
        base.update(
            rating_id=len(ratings) + 1, dataset="ncm", dataset_fingerprint="sha256:abc", backend="hub",
            created_at="2026-01-01T00:00:00Z", submitted_at="2026-01-01T00:05:00Z", auto_tie=False, excluded=False,
        )  # fmt: skip
        base.update(fields)
        ratings.append(base)

    for experiment, (a, b) in ((7, ("Cakechat", "NCM")), (8, ("Human1", "NCM"))):
        raters = [f"h{experiment}{i}" for i in range(5)]
        for prompt in range(12):
            common = dict(experiment_id=experiment, system_a=a, system_b=b, prompt_id=prompt, item_id=prompt)
            if prompt == 11:
                add(**common, item_kind="pair", outcome="tie", auto_tie=True)
                continue
            for rater in rng.choice(raters, size=3, replace=False):
                outcome = str(rng.choice(["A", "B", "tie"], p=[0.5, 0.3, 0.2]))
                left = str(rng.choice(["A", "B"]))
                excluded = rater == raters[0]
                add(
                    **common, item_kind="pair", left=left, choice=choice_for(outcome, left), outcome=outcome,
                    rater=rater, task_id=f"t{experiment}-{rater}-{prompt // 4}", seconds_on_task=40.0,
                    excluded=excluded, exclusion_reason="flagged: too fast" if excluded else None,
                )  # fmt: skip
        for rater in raters[:2]:
            add(
                experiment_id=experiment, system_a=a, system_b=b, prompt_id=100, item_id=1000, item_kind="attention",
                left="B", choice="right", outcome="B", expected="B", rater=rater, task_id=f"t{experiment}-{rater}-0",
                seconds_on_task=40.0,
            )  # fmt: skip
            add(
                experiment_id=experiment, system_a=a, system_b=b, prompt_id=3, item_id=1001, item_kind="repeat",
                left="A", choice="tie", outcome="tie", rater=rater, task_id=f"t{experiment}-{rater}-0",
                seconds_on_task=40.0,
            )  # fmt: skip
    return ratings


def write_jsonl(path: Path, ratings: list[dict]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"schema_version": 1, "kind": "ratings", "fields": FIELDS}) + "\n")
        for rating in ratings:
            handle.write(json.dumps(rating) + "\n")
    return path


def csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(path: Path, ratings: list[dict], fields: list[str] = FIELDS) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(fields)
        for rating in ratings:
            writer.writerow([csv_cell(rating.get(name)) for name in fields])
    return path


def expected_figures(ratings: list[dict]) -> dict:
    """The experiment page's figures by direct library calls on the Python records (not via the script)."""
    pairs = [r for r in ratings if r["item_kind"] == "pair"]
    rated = [r for r in pairs if r["rater"] is not None]
    rows = [
        RatingRow(
            item=str(r["prompt_id"]),
            rater=r["rater"],
            outcome=r["outcome"],
            kind=r["item_kind"],
            choice=r["choice"],
            left=r["left"],
            expected=r["expected"],
            task=r["task_id"],
            seconds_on_task=r["seconds_on_task"],
            excluded=r["excluded"],
        )
        for r in ratings
    ]
    quality = screen(rows)
    return {
        "results": summarize([r["outcome"] for r in pairs]).to_dict(),
        "results_without_excluded": summarize([r["outcome"] for r in pairs if not r["excluded"]]).to_dict(),
        "agreement": agreement(
            [str(r["prompt_id"]) for r in rated],
            [r["rater"] for r in rated],
            [r["outcome"] for r in rated],
            excluded=[r["excluded"] for r in rated],
        ).to_dict(),
        "raters": len(quality),
        "flagged_raters": [{"rater": q.rater, "flags": q.flags} for q in quality if q.flagged],
    }


def run_json(capsys, *args) -> dict:
    capsys.readouterr()
    assert analyze_ratings.main([*map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("writer", [write_jsonl, write_csv], ids=["jsonl", "csv"])
def test_script_figures_equal_direct_calls(capsys, tmp_path, writer):
    ratings = make_ratings()
    path = writer(tmp_path / ("ratings.jsonl" if writer is write_jsonl else "ratings.csv"), ratings)
    output = run_json(capsys, "--ratings", path)
    assert [e["experiment"] for e in output["experiments"]] == ["7", "8"]
    for report in output["experiments"]:
        mine = [r for r in ratings if str(r["experiment_id"]) == report["experiment"]]
        expected = expected_figures(mine)
        for key, value in expected.items():
            assert report[key] == value, key
        assert report["automatic_ties"] == 1 and report["quality_checks"] == 4
        # The excluded rater really changes something, so both columns are exercised.
        assert report["agreement"]["excluded_judgements"] > 0
        assert report["results"]["n"] > report["results_without_excluded"]["n"]


def test_jsonl_and_csv_give_the_same_output(capsys, tmp_path):
    ratings = make_ratings(seed=9)
    from_jsonl = run_json(capsys, "--ratings", write_jsonl(tmp_path / "r.jsonl", ratings))
    from_csv = run_json(capsys, "--ratings", write_csv(tmp_path / "r.csv", ratings))
    assert from_jsonl == from_csv


def test_text_output_shows_the_same_numbers(capsys, tmp_path):
    ratings = make_ratings()
    path = write_jsonl(tmp_path / "ratings.jsonl", ratings)
    assert analyze_ratings.main(["--ratings", str(path), "--experiment", "8"]) == 0
    text = capsys.readouterr().out
    mine = [r for r in ratings if r["experiment_id"] == 8]
    expected = expected_figures(mine)
    results, cohen = expected["results"], expected["agreement"]["with_excluded"]["cohen_kappa"]
    assert text.startswith("Experiment 8 on ncm: A = Human1, B = NCM")
    assert "Experiment 7" not in text
    assert f"{results['wins']} / {results['ties']} / {results['losses']}" in text
    low, high = results["win_rate_ci"]
    assert f"{results['win_rate']:.3f} [{low:.3f}, {high:.3f}]" in text
    assert f"{results['p_value']:.4f}" in text
    assert f"{cohen:.3f} (" in text
    assert f"raters flagged by screening: {len(expected['flagged_raters'])} of 5" in text


def test_minimal_third_party_file(capsys, tmp_path):
    rows = [
        {"prompt_id": p, "system_a": "X", "system_b": "Y", "outcome": o, "rater": r}
        for p, votes in enumerate([("A", "A", "B"), ("B", "B", "B"), ("tie", "A", "A"), ("A", "B", "tie")])
        for r, o in zip(("u1", "u2", "u3"), votes, strict=True)
    ]
    path = write_csv(tmp_path / "minimal.csv", rows, fields=["prompt_id", "system_a", "system_b", "outcome", "rater"])
    (report,) = run_json(capsys, "--ratings", path)["experiments"]
    assert report["experiment"] == "X vs Y" and report["dataset"] is None
    outcomes = [r["outcome"] for r in rows]
    assert report["results"] == summarize(outcomes).to_dict()
    direct = agreement([str(r["prompt_id"]) for r in rows], [r["rater"] for r in rows], outcomes)
    assert report["agreement"] == direct.to_dict()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.jsonl", '{"schema_version": 2, "kind": "ratings"}\n', "line 1: header must say"),
        (
            "bad.jsonl",
            '{"schema_version": 1, "kind": "ratings"}\n'
            '{"prompt_id": 1, "system_a": "X", "system_b": "Y", "outcome": "A", "rater": "u"}\n'
            '{"prompt_id": 2, "system_a": "X", "system_b": "Y", "outcome": "C", "rater": "u"}\n',
            "line 3: outcome must be A, B or tie, got 'C'",
        ),
        ("bad.jsonl", "{not json\n", "line 1: not JSON"),
        (
            "bad.jsonl",
            '{"prompt_id": 1, "system_a": "X", "outcome": "A", "rater": "u"}\n',
            "line 1: missing field(s): system_b",
        ),
        ("bad.csv", "prompt_id,system_a,outcome,rater\n1,X,A,u\n", "line 1: missing column(s): system_b"),
        (
            "bad.csv",
            "prompt_id,system_a,system_b,outcome,rater,excluded\n1,X,Y,A,u,false\n2,X,Y,A,u,maybe\n",
            "line 3: excluded must be true or false",
        ),
        ("bad.csv", "prompt_id,system_a,system_b,outcome,rater\n1,X,Y,A,\n", "line 2: rater is empty"),
        (
            "bad.csv",
            "prompt_id,system_a,system_b,outcome,rater,left\n1,X,Y,A,u,C\n",
            "line 2: left must be 'A', 'B' or None",
        ),
        (
            "bad.csv",
            "experiment_id,prompt_id,system_a,system_b,outcome,rater\n1,1,X,Y,A,u\n1,2,X,Z,A,u\n",
            "line 3: experiment 1 compares X vs Y",
        ),
    ],
)
def test_bad_files_name_the_file_and_line(capsys, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert analyze_ratings.main(["--ratings", str(path)]) == 3
    err = capsys.readouterr().err
    assert f"{path}, {message}" in err


def test_unknown_experiment_and_missing_file(capsys, tmp_path):
    path = write_jsonl(tmp_path / "ratings.jsonl", make_ratings())
    assert analyze_ratings.main(["--ratings", str(path), "--experiment", "99"]) == 4
    assert "no ratings for experiment '99'" in capsys.readouterr().err
    assert analyze_ratings.main(["--ratings", str(tmp_path / "absent.csv")]) == 4
    assert "ratings file not found" in capsys.readouterr().err


def test_runs_as_a_script(tmp_path):
    path = write_jsonl(tmp_path / "ratings.jsonl", make_ratings())
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--ratings", str(path)], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert "Experiment 7 on ncm: A = Cakechat, B = NCM" in done.stdout
    assert "Cohen's weighted kappa" in done.stdout and "Fleiss' kappa" in done.stdout


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_held_out_rows_are_left_out_but_still_screened(capsys, tmp_path, fmt):
    """The hub's download marks a flagged rater's rows `held_out` (awaiting an admin): the script leaves them out of
    every figure, as the experiment page does, and still screens the rater. The hub's burst flag (raters created from
    one client) is not recomputed: the download carries nothing derived from client addresses, so the screening here
    is the toolkit's rules only, compared key by key (the admin-only `client_burst` is the one thing left out)."""
    ratings = [{**r, "held_out": r["rater"] == "h71"} for r in make_ratings() if r["experiment_id"] == 7]
    fields = [*FIELDS, "held_out"]
    if fmt == "jsonl":
        path = tmp_path / "ratings.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            handle.write(json.dumps({"schema_version": 1, "kind": "ratings", "fields": fields}) + "\n")
            handle.writelines(json.dumps(r) + "\n" for r in ratings)
    else:
        path = write_csv(tmp_path / "ratings.csv", ratings, fields=fields)
    (report,) = run_json(capsys, "--ratings", path)["experiments"]
    counted = [r for r in ratings if not r["held_out"]]
    expected = expected_figures(counted)
    for key in ("results", "results_without_excluded", "agreement"):
        assert report[key] == expected[key], key
    held = [r for r in ratings if r["held_out"] and r["item_kind"] == "pair"]
    assert held and report["held_out"] == {"raters": 1, "judgements": len(held)}
    screened = expected_figures(ratings)  # held-out raters are still screened, on all their rows
    assert report["raters"] == screened["raters"] == 5
    assert report["flagged_raters"] == screened["flagged_raters"]
    assert all("client" not in flag for q in report["flagged_raters"] for flag in q["flags"])
