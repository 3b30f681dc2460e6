"""`chateval rubric check|list|run` through the real entry point, against a real local endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.cli.main import main
from evaluation.dataset import Prompt, Turn, write_dataset
from evaluation.llm.server import LocalChatServer

from .judge import table_judge
from .texts import VALID

KEY = "sk-rubric-cli-9c41d7e0b2a64f15"


def run(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def tiny(tmp_path) -> Path:
    prompts = [
        Prompt(id=f"t{i}", context=(Turn(role="user", content=f"question {i}?"),), references=(f"answer {i}",))
        for i in range(3)
    ]
    fields = dict(name="tiny", version="1", description="", source="", license="", citation="")
    write_dataset(tmp_path / "tiny", fields, prompts)
    return tmp_path / "tiny"


def test_check_a_valid_and_an_invalid_rubric(capsys, tmp_path):
    code, out, _ = run(capsys, "rubric", "check", "milo-qa")
    assert code == 0 and "valid" in out and "signature: rubric:milo-qa|v1|sha256=" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(VALID.replace("weight: 0.4", "weight: 0.5"))
    code, _, err = run(capsys, "rubric", "check", bad)
    assert code == 3 and f"{bad}, line 8: criterion weights sum to 1.1, not 1" in err
    code, out, _ = run(capsys, "rubric", "list")
    assert code == 0 and "helpfulness" in out and "milo-qa" in out


def test_run_writes_results_per_response_and_per_system(capsys, tmp_path, tiny, monkeypatch):
    good = tmp_path / "good.txt"
    good.write_text("fine answer\nfine answer\nfine answer\n")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "".join(
            json.dumps({"prompt_id": f"t{i}", "response": r}) + "\n"
            for i, r in enumerate(["fine answer!", "poor answer", "???"])
        )
    )
    all_five = {"Relevance": "5", "Informativeness": "5", "Fluency": "5"}
    grades = {
        "fine answer": all_five,
        "fine answer!": all_five,
        "poor answer": {"Relevance": "2", "Informativeness": "1", "Fluency": "3"},
        "???": {**all_five, "Fluency": "raw:no idea"},
    }
    monkeypatch.setenv("RUBRIC_TEST_KEY", KEY)
    out_file = tmp_path / "results.jsonl"
    args = [
        "rubric",
        "run",
        "--rubric",
        "helpfulness",
        "--dataset",
        tiny,
        "--responses",
        good,
        "--responses",
        f"sys-b={mixed}",
        "--out",
        out_file,
        "--model",
        "judge-1",
        "--api-key-env",
        "RUBRIC_TEST_KEY",
    ]
    with LocalChatServer(responder=table_judge(grades), expected_key=KEY) as server:
        code, out, err = run(capsys, *args, "--endpoint", server.base_url)
        assert code == 0, err
        assert server.requests == 18  # 6 responses x 3 criteria
        code, _, again = run(capsys, *args, "--endpoint", server.base_url)
        assert code == 0 and server.requests == 18  # the re-run came from the cache
    assert "usage: 18 live call(s), 0 from cache" in err and "usage: 0 live call(s), 18 from cache" in again
    assert "judge calls" in err  # the progress bar
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    header, responses, groups = lines[0], lines[1:7], lines[7:]
    assert header["kind"] == "run" and header["judge"]["model"] == "judge-1" and header["judge"]["api_key_set"]
    assert header["signature"].startswith("rubric:helpfulness|v1|") and header["dataset"].startswith("tiny@1#")
    assert [(r["system"], r["prompt_id"], r["status"]) for r in responses] == [
        ("good", "t0", "PASSED"),
        ("good", "t1", "PASSED"),
        ("good", "t2", "PASSED"),
        ("sys-b", "t0", "PASSED"),
        ("sys-b", "t1", "REDO"),
        ("sys-b", "t2", None),
    ]
    # poor answer: 0.3 * 2/5 + 0.3 * 1/5 + 0.4 * 3/5 = 0.12 + 0.06 + 0.24 = 0.42
    assert responses[4]["score"] == pytest.approx(0.42)
    assert responses[5]["criteria"][2] == {
        "criterion": "fluency",
        "status": "unparseable",
        "explanation_truncated": False,
        "raw": "no idea",
        "problem": "no grade found (neither a JSON 'grade' nor a 'Grade:' line)",
    }
    assert [(g["group"], g["items"], g["scored"], g["passed"]) for g in groups] == [
        ("good", 3, 3, 3),
        ("sys-b", 3, 2, 1),
    ]
    assert groups[1]["mean"] == pytest.approx((1.0 + 0.42) / 2) and groups[1]["coverage"] == pytest.approx(2 / 3)
    assert "sys-b" in out and "66.7%" in out and "50.0%" in out
    for text in (out, err, again, out_file.read_text()):
        assert KEY not in text


def test_run_refuses_bad_input_before_calling(capsys, tmp_path, tiny):
    short = tmp_path / "short.txt"
    short.write_text("only one line\n")
    with LocalChatServer(responder=lambda request: "Grade: 5", expected_key=KEY) as server:
        common = ["--dataset", tiny, "--out", tmp_path / "r.jsonl", "--endpoint", server.base_url, "--model", "m"]
        code, _, err = run(capsys, "rubric", "run", "--rubric", "helpfulness", "--responses", short, *common)
        assert code == 3 and "expected 3 lines" in err
        code, _, err = run(capsys, "rubric", "run", "--rubric", "nope", "--responses", short, *common)
        assert code == 4 and "no rubric file or shipped rubric" in err
        assert server.requests == 0


def test_unreachable_endpoint_exits_with_the_endpoint_code(capsys, tmp_path, tiny):
    responses = tmp_path / "r.txt"
    responses.write_text("a\nb\nc\n")
    with LocalChatServer() as server:
        dead = server.base_url  # nothing listens there once the server has stopped
    config = tmp_path / "judge.yaml"
    config.write_text(f"base_url: {dead}\nmodel: m\nmax_retries: 0\n")
    code, _, err = run(
        capsys,
        "rubric",
        "run",
        "--rubric",
        "helpfulness",
        "--dataset",
        tiny,
        "--responses",
        responses,
        "--out",
        tmp_path / "o.jsonl",
        "--config",
        config,
        "--no-cache-calls",
    )
    assert code == 6 and "every judge call failed" in err
