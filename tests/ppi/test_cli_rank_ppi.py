"""`chateval rank ppi` end to end: ratings files in, table and JSON report out; bad input refused (exit code 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation.ppi.report import rank_report
from evaluation.ppi.simulate import Scenario, simulate

from .helpers import write_votes

SCENARIO = Scenario(n_prompts=30, human_fraction=0.3, human_votes=1)


@pytest.fixture(scope="module")
def items():
    return simulate(np.random.default_rng(3), SCENARIO)


@pytest.fixture
def files(tmp_path, items):
    human, judge = tmp_path / "human.jsonl", tmp_path / "judge.jsonl"
    write_votes(items, SCENARIO.n_prompts, human, judge)
    return human, judge


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_report_matches_the_library_and_prints_a_table(run_cli, tmp_path, files, items):
    human, judge = files
    out = tmp_path / "report.json"
    result = run_cli("rank", "ppi", "--human", human, "--judge", judge, "--anchor", "system-0", "--out", out)
    assert result.exit_code == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    expected = rank_report(items, 0, level=0.95).to_json()
    assert report["anchor"] == "system-0" and report["level"] == 0.95
    assert report["method"].startswith("ppi-rank|v1|") and "level=0.95" in report["method"]
    assert report["n_human_votes"] == int(items.labelled.sum())
    assert report["effective_human_n"] == pytest.approx(expected["effective_human_n"])
    assert report["effective_human_n"] > report["n_human_votes"]  # this judge helps
    by_name = {row["system"]: row for row in expected["systems"]}
    assert [row["system"] for row in report["systems"]] == [row["system"] for row in expected["systems"]]
    for row in report["systems"]:
        assert set(row) >= {"system", "system_id", "human", "judge", "ppi", "rank_set"}
        for part in ("human", "judge", "ppi"):
            assert row[part]["estimate"] == pytest.approx(by_name[row["system"]][part]["estimate"], abs=1e-9)
            assert row[part]["interval"] == pytest.approx(by_name[row["system"]][part]["interval"], abs=1e-9)
        assert row["system"] in result.stdout
    anchor = next(row for row in report["systems"] if row["anchor"])
    assert anchor["ppi"] == {"estimate": 0.0, "se": 0.0, "interval": [0.0, 0.0]}
    assert "effective human sample size" in result.stdout and "ppi-rank|v1" in result.stdout
    assert len(report["pairs"]) == 15 and all(p["p_holm"] >= p["p_value"] for p in report["pairs"])


def test_default_anchor_and_level(run_cli, tmp_path, files):
    human, judge = files
    out = tmp_path / "report.json"
    result = run_cli("rank", "ppi", "--human", human, "--judge", judge, "--level", "0.9", "--out", out)
    assert result.exit_code == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["level"] == 0.9 and report["anchor"] in {row["system"] for row in report["systems"]}


def test_several_judges_need_a_name(run_cli, tmp_path, files):
    human, judge = files
    rows = _rows(judge)
    _write(judge, rows + [{**row, "rater": "judge-2"} for row in rows])
    result = run_cli("rank", "ppi", "--human", human, "--judge", judge)
    assert result.exit_code == 3
    assert "2 judges" in result.stderr and "--judge-name" in result.stderr
    assert run_cli("rank", "ppi", "--human", human, "--judge", judge, "--judge-name", "judge-2").exit_code == 0
    result = run_cli("rank", "ppi", "--human", human, "--judge", judge, "--judge-name", "judge-3")
    assert result.exit_code == 3 and "'judge-3' is not in the judge file" in result.stderr


def _refused(run_cli, human, judge, *words, extra=()):
    result = run_cli("rank", "ppi", "--human", human, "--judge", judge, *extra)
    assert result.exit_code == 3, result.stdout
    message = " ".join(result.stderr.split())
    for word in words:
        assert word in message, message
    return message


def test_files_whose_systems_do_not_overlap(run_cli, files):
    human, judge = files
    _write(judge, [{**r, "system_a": "x-" + r["system_a"], "system_b": "x-" + r["system_b"]} for r in _rows(judge)])
    _refused(run_cli, human, judge, "no system in common", "human 'system-0'", "judge 'x-system-0'")


def test_files_whose_prompts_do_not_overlap(run_cli, files):
    human, judge = files
    _write(judge, [{**r, "prompt_id": "other-" + r["prompt_id"]} for r in _rows(judge)])
    _refused(run_cli, human, judge, "no prompt in common", "'other-q0'")


def test_a_system_the_judge_never_saw(run_cli, files):
    human, judge = files
    _write(judge, [r for r in _rows(judge) if "system-5" not in (r["system_a"], r["system_b"])])
    _refused(run_cli, human, judge, "judge file has no vote on system(s) the humans judged: 'system-5'")


def test_a_system_with_no_human_votes(run_cli, files):
    human, judge = files
    extra = [{**r, "system_b": "newcomer"} for r in _rows(judge) if r["system_a"] == "system-0"]
    _write(judge, _rows(judge) + extra)
    _refused(run_cli, human, judge, "no human votes", "'newcomer'")


def test_unknown_anchor(run_cli, files):
    human, judge = files
    _refused(run_cli, human, judge, "anchor 'nobody' is not among the judged systems", extra=("--anchor", "nobody"))


def test_disconnected_comparison_graph(run_cli, files):
    human, judge = files
    groups = ({"system-0", "system-1", "system-2"}, {"system-3", "system-4", "system-5"})

    def within(r):
        return any({r["system_a"], r["system_b"]} <= g for g in groups)

    _write(human, [r for r in _rows(human) if within(r)])
    _write(judge, [r for r in _rows(judge) if within(r)])
    _refused(run_cli, human, judge, "comparison graph is disconnected", "'system-0', 'system-1', 'system-2' |")


def test_judge_graded_no_item_the_humans_judged(run_cli, files):
    human, judge = files
    humans = _rows(human)
    judged_prompts = {r["prompt_id"] for r in humans if {r["system_a"], r["system_b"]} == {"system-0", "system-1"}}
    _write(human, [r for r in humans if {r["system_a"], r["system_b"]} == {"system-0", "system-1"}])
    _write(  # the judge graded these prompts, but only for other pairs
        judge,
        [
            r
            for r in _rows(judge)
            if r["prompt_id"] not in judged_prompts or {r["system_a"], r["system_b"]} != {"system-0", "system-1"}
        ],
    )
    _refused(run_cli, human, judge, "no item (prompt and system pair) has both a human and a judge vote")


def test_pairs_with_too_few_human_items_are_left_out_and_said(run_cli, tmp_path, files):
    human, judge = files
    rows = _rows(human)
    pair = {"system-0", "system-1"}
    _write(
        human,
        [r for r in rows if {r["system_a"], r["system_b"]} != pair]
        + [next(r for r in rows if {r["system_a"], r["system_b"]} == pair)],
    )
    out = tmp_path / "report.json"
    result = run_cli("rank", "ppi", "--human", human, "--judge", judge, "--out", out)
    assert result.exit_code == 0, result.stderr
    note = "1 system pair(s) with judge votes but fewer than 2 human-judged items were left out: 'system-0 vs system-1'"
    assert note in " ".join(result.stderr.split())
    assert json.loads(out.read_text(encoding="utf-8"))["n_pairs"] == 14


def test_a_bad_line_is_named(run_cli, files):
    human, judge = files
    rows = _rows(judge)
    rows[4]["outcome"] = "maybe"
    _write(judge, rows)
    _refused(run_cli, human, judge, "judge.jsonl, line 5", "unknown outcome 'maybe'")
