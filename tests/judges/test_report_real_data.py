"""The judge and its report card on the real ChatEval votes (../shared/data/chateval/votes.csv): the NCM vs CakeChat
runs (judged in both orientations there) and Human1 vs Human2, judged by a weak judge built from an automatic
metric (more distinct words wins; on equal counts it names the response shown first, a position bias), served by the
local endpoint and driven through the real CLI. Only the card's completeness and form are asserted; run with -s to
see it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evaluation.llm.server import LocalChatServer

from .helpers import shown_responses

RUNS = {"AMT_NCM_Test_NCM_Cakechat", "AMT_NCM_Test_Cakechat_NCM", "AMT_NCM_Test_Human1_Human2"}
FILES = {
    "NCM": "responses/ncm__ncm_original.txt",
    "Cakechat": "responses/ncm__cakechat.txt",
    "Human1": "references/ncm_human_1.txt",
    "Human2": "references/ncm_human_2.txt",
}
VOTE = {"0": "A", "1": "B", "-1": "tie"}


def distinct_words_judge(request: dict) -> str:
    first, second = (len(set(text.split())) for text in shown_responses(request["messages"]))
    if first == second:
        return "Equally varied; the first reads fine.\n[[A]]"
    return "More varied wording.\n[[A]]" if first > second else "More varied wording.\n[[B]]"


@pytest.fixture
def human_file(shared_data: Path, tmp_path: Path) -> Path:
    with (shared_data / "votes.csv").open(newline="") as handle:
        votes = [row for row in csv.DictReader(handle) if row["run"] in RUNS]
    assert len(votes) > 1500
    path = tmp_path / "human.jsonl"
    rows = [
        {
            "prompt_id": row["prompt"],
            "system_a": row["model_1"],
            "system_b": row["model_2"],
            "outcome": VOTE[row["vote"]],
            "rater": row["worker"],
            "experiment_id": row["run"],
            "dataset": "ncm",
        }
        for row in votes
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_report_card_on_the_real_chateval_votes(run_cli, shared_data, ncm_dataset, human_file, tmp_path):
    judge = tmp_path / "judge.jsonl"
    responses = [arg for name, file in FILES.items() for arg in ("--responses", f"{name}={shared_data / file}")]
    with LocalChatServer(responder=distinct_words_judge) as server:
        made = run_cli(
            "judge", "pairwise", "--dataset", ncm_dataset.path, "--pairs", human_file, *responses,
            "--endpoint", server.base_url, "--model", "distinct-words", "--out", judge, "--no-progress", "--no-cache",
        )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    result = run_cli("judge", "report", "--human", human_file, "--judge", judge, "--json")
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    print(json.dumps(card, indent=1))

    assert card["judge"] == "judge:distinct-words|pairwise-v1|127.0.0.1" and card["dataset"] == "ncm"
    assert {s["system"] for s in card["systems"]} == {"NCM", "Cakechat", "Human1", "Human2"}
    coverage = card["coverage"]
    assert coverage["pairs"] == coverage["auto_ties"] + coverage["asked"] and coverage["asked"] > 300
    assert coverage["graded"] == coverage["asked"] and coverage["ungraded"] == coverage["unparseable_answers"] == 0
    agreement = card["human_agreement"]
    assert agreement["items"] + agreement["human_items_not_graded"] == agreement["human_items"]
    assert agreement["items"] > 300 and agreement["judge_items_without_humans"] == coverage["auto_ties"]
    assert sum(map(sum, agreement["confusion"]["counts"])) == agreement["items"]
    assert -1 <= agreement["cohen_kappa"] <= 1
    proportions = [
        card["position_consistency"],
        agreement["agreement"],
        *(card["length_preference"][k] for k in ("judge", "humans", "judge_all_items")),
    ]
    for proportion in proportions:
        assert proportion["n"] > 0 and 0 <= proportion["count"] <= proportion["n"]
        low, high = proportion["interval"]
        assert 0 <= low <= proportion["share"] <= high <= 1
    # the metric judge names the first response on every equal count: those pairs are the inconsistent ones
    assert card["position_consistency"]["share"] < 1
    assert -1 <= card["length_preference"]["difference"] <= 1
