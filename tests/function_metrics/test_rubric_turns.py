"""A rubric over conversation turns, gated by a function metric ("rubric only on questions"), graded by a real
local judge endpoint through `chateval evaluate --conversations ... --rubric`."""

from __future__ import annotations

import json

import pytest
from rubrics.judge import table_judge  # tests/ is on sys.path (rootdir-relative packages)

from evaluation.llm.server import LocalChatServer

KEY = "sk-conversations-7f3e2a91c0d54b68"
ALL_FIVE = {"Relevance": "5", "Informativeness": "5", "Fluency": "5"}
POOR = {"Relevance": "2", "Informativeness": "1", "Fluency": "3"}  # 0.3*2/5 + 0.3*1/5 + 0.4*3/5 = 0.42


@pytest.fixture
def log(write_log):
    def conversation(cid, system, answers):
        messages = []
        for answer in answers:
            messages += [{"role": "user", "content": f"Tell me about {cid}."}, {"role": "assistant", "content": answer}]
        return {"id": cid, "system": system, "messages": messages}

    return write_log(
        [
            conversation("c1", "bot-a", ["Which part do you mean?", "It is a city."]),
            conversation("c2", "bot-a", ["Do you want the long story?"]),
            conversation("c3", "bot-b", ["No idea.", "Really no idea."]),
        ]
    )


@pytest.fixture
def judge_config(tmp_path, monkeypatch):
    def write(base_url: str):
        monkeypatch.setenv("CONVERSATION_JUDGE_KEY", KEY)
        path = tmp_path / "judge.yaml"
        path.write_text(f"base_url: {base_url}\nmodel: judge-1\napi_key_env: CONVERSATION_JUDGE_KEY\n")
        return path

    return write


def test_the_rubric_grades_only_the_turns_its_gate_admits(run_cli, log, judge_config):
    grades = {"Which part do you mean?": ALL_FIVE, "Do you want the long story?": POOR}
    with LocalChatServer(responder=table_judge(grades), expected_key=KEY) as server:
        args = ["evaluate", "--conversations", log, "--rubric", "helpfulness", "--rubric-when", "is-question:1"]
        result = run_cli(*args, "--judge-config", judge_config(server.base_url), "--json")
        assert result.exit_code == 0, result.stderr
        assert server.requests == 2 * 3  # two question turns x three criteria; statements never reach the judge
    assert "judge calls" in result.stderr and "usage: 6 live call(s)" in result.stderr  # progress and usage
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    header = lines[0]
    rubric = next(m for m in header["metrics"] if m["metric"] == "rubric-helpfulness")
    assert rubric["depends_on"] == [{"metric": "is-question", "min": 1.0}]
    assert rubric["signature"].startswith("rubric:helpfulness|v1|") and "judge=judge-1@" in rubric["signature"]
    assert rubric["judge"]["api_key_set"] is True
    turns = {(t["conversation"], t["turn"]): t for t in lines if t["kind"] == "turn"}
    assert turns[("c1", 1)]["values"]["rubric-helpfulness.score"] == pytest.approx(1.0)
    assert turns[("c1", 1)]["values"]["rubric-helpfulness.passed"] == 1.0
    assert turns[("c2", 1)]["values"]["rubric-helpfulness.score"] == pytest.approx(0.42)
    assert turns[("c2", 1)]["values"]["rubric-helpfulness.passed"] == 0.0
    assert turns[("c2", 1)]["details"]["rubric-helpfulness"]["status"] == "REDO"
    criteria = turns[("c2", 1)]["details"]["rubric-helpfulness"]["criteria"]
    assert [(c["criterion"], c["grade"]) for c in criteria] == [
        ("relevance", "2"),
        ("informativeness", "1"),
        ("fluency", "3"),
    ]
    for key in (("c1", 3), ("c3", 1), ("c3", 3)):
        assert "rubric-helpfulness.score" not in turns[key]["values"]
        assert turns[key]["skipped"]["rubric-helpfulness"] == "is-question=0, not 1 <= is-question"
    assert "rubric-helpfulness" not in turns[("c1", 0)].get("skipped", {})  # user turns: not the rubric's role
    summary = {(g["system"], g["role"], g["metric"]): g for g in lines[-1]["groups"]}
    assert summary[("bot-a", "assistant", "rubric-helpfulness.score")]["mean"] == pytest.approx((1.0 + 0.42) / 2)
    assert ("bot-b", "assistant", "rubric-helpfulness.score") not in summary
    for text in (result.stdout, result.stderr):
        assert KEY not in text


def test_rubric_problems_are_refused_before_any_call(run_cli, log, judge_config):
    with LocalChatServer(responder=table_judge({}), expected_key=KEY) as server:
        config = judge_config(server.base_url)
        base = ["evaluate", "--conversations", log, "--judge-config", config]
        result = run_cli(*base, "--rubric", "milo-qa")
        assert result.exit_code == 5
        assert "shows the judge reference, which conversation turns do not have" in " ".join(result.stderr.split())
        result = run_cli(*base, "--rubric", "helpfulness", "--rubric-when", "is-question")
        assert result.exit_code == 5 and "expected METRIC:MIN[:MAX]" in result.stderr
        result = run_cli(*base, "--rubric", "helpfulness", "--rubric-when", "no-metric:1")
        assert result.exit_code == 4 and "'no-metric', which is not a registered metric" in result.stderr
        assert server.requests == 0
    result = run_cli("evaluate", "--conversations", log, "--rubric-when", "is-question:1")
    assert result.exit_code == 2 and "drop --rubric-when" in " ".join(result.stderr.split())
