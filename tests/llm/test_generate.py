"""`chateval generate` against a real local endpoint: valid response and log-likelihood files, resumable runs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import time
from collections import Counter

import pytest

from evaluation.llm.server import LocalChatServer
from evaluation.loglik import read_loglik
from evaluation.responses import read_responses
from tests.llm.conftest import CHATEVAL, KEY
from tests.llm.processes import child_process, ctrl_c_reaches_child


def reply_for(request: dict) -> str:
    return "you said: " + request["messages"][-1]["content"]


def independent_reference_logprob(context, reference: str, system_prompt: str) -> tuple[float, int]:
    """What the server's documented log-probabilities give the reference after the rendered conversation."""
    labels = {"user": "User", "assistant": "Assistant", "system": "System"}
    prefix = "\n".join([f"System: {system_prompt}", *(f"{labels[t.role]}: {t.content}" for t in context), "Assistant:"])
    text = prefix + " " + reference
    picked = [m.group() for m in re.finditer(r"\s*\S+", text) if m.start() >= len(prefix)]
    total = sum(-(0.5 + 5.0 * int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) / 2**32) for t in picked)
    return total, len(picked)


def test_generate_writes_files_evaluate_reads(run_cli, hub_open, tmp_path, monkeypatch):
    monkeypatch.setenv("CHATEVAL_LLM_API_KEY", KEY)
    seen: list[dict] = []
    out, loglik = tmp_path / "system.jsonl", tmp_path / "system.loglik.jsonl"
    with LocalChatServer(responder=lambda r: seen.append(r) or reply_for(r), expected_key=KEY) as server:
        result = run_cli(
            "generate", "--dataset", "hub-open-v1", "--endpoint", server.base_url, "--model", "my-bot",
            "--system-prompt", "Be brief.", "--temperature", "0.4", "--concurrency", "4",
            "--out", out, "--loglik-out", loglik,
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "responses: 120 written, 0 already in" in result.stderr
    assert "usage: 240 live call(s), 0 from cache, 0 failed" in result.stderr
    responses = read_responses(out, dataset=hub_open)  # the toolkit's own validation of the file
    assert responses == ["you said: " + p.context[-1].content for p in hub_open.prompts]
    sent = {r["messages"][-1]["content"]: r for r in seen}
    for prompt in hub_open.prompts:  # every turn of multi-turn contexts is sent, after the system prompt
        request = sent[prompt.context[-1].content]
        assert request["messages"] == [{"role": "system", "content": "Be brief."}] + [
            {"role": t.role, "content": t.content} for t in prompt.context
        ]
        assert (request["model"], request["temperature"]) == ("my-bot", 0.4)
    assert server.max_in_flight <= 4
    likelihoods = read_loglik(loglik, dataset=hub_open)
    for i, prompt in enumerate(hub_open.prompts):
        expected, tokens = independent_reference_logprob(prompt.context, prompt.references[0], "Be brief.")
        assert likelihoods.logprob[i] == pytest.approx(expected, rel=1e-12)
        assert likelihoods.tokens[i] == tokens
    scored = run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", out, "--loglik", loglik, "--json")
    assert scored.exit_code == 0, scored.stderr
    assert KEY not in result.stderr + result.stdout


def test_rerun_of_a_finished_run_sends_nothing(run_cli, tmp_path):
    out = tmp_path / "system.jsonl"
    with LocalChatServer(responder=reply_for) as server:
        args = ("generate", "--dataset", "hub-open-v1", "--endpoint", server.base_url, "--model", "m", "--out", out)
        assert run_cli(*args).exit_code == 0
        before = out.read_bytes()
        again = run_cli(*args)
    assert again.exit_code == 0 and "0 written, 120 already in" in again.stderr
    assert server.counts["/v1/chat/completions"] == 120 and out.read_bytes() == before


def ids_in(path) -> Counter:
    return Counter(json.loads(line)["prompt_id"] for line in path.read_text().splitlines())


def wait_for_lines(path, count: int, process: subprocess.Popen, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.read_text().count("\n") >= count):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the generation did not progress"
        time.sleep(0.02)


def test_killed_half_way_then_resumed_gives_each_prompt_once(hub_open, tmp_path):
    out = tmp_path / "system.jsonl"
    with LocalChatServer(responder=reply_for, latency_s=0.05) as server:
        command = [CHATEVAL, "generate", "--dataset", "hub-open-v1", "--endpoint", server.base_url, "--model", "m",
                   "--concurrency", "2", "--out", str(out), "--no-progress"]  # fmt: skip
        with child_process(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as first:  # killed in any case
            wait_for_lines(out, 30, first)
            first.kill()  # SIGKILL: no clean-up code runs
            first.communicate()
        done_before = sum(ids_in(out).values())
        assert 30 <= done_before < 120
        with out.open("ab") as handle:  # what a kill in the middle of a write leaves: a torn last line
            handle.write(b'{"prompt_id": "hov1-1')
        second = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert f"{120 - done_before} written, {done_before} already in" in second.stderr
    assert ids_in(out) == Counter(hub_open.prompt_ids)  # every prompt exactly once
    assert len(read_responses(out, dataset=hub_open)) == 120
    # Done prompts were not asked again: at most the requests in flight at the kill (2) were lost.
    assert server.counts["/v1/chat/completions"] <= 120 + 2


def test_ctrl_c_stops_with_a_resume_hint(tmp_path):
    out = tmp_path / "system.jsonl"
    with LocalChatServer(responder=reply_for, latency_s=0.05) as server:
        command = [CHATEVAL, "generate", "--dataset", "hub-open-v1", "--endpoint", server.base_url, "--model", "m",
                   "--concurrency", "2", "--out", str(out), "--no-progress"]  # fmt: skip
        with child_process(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches_child
        ) as process:  # killed at the end of the block if SIGINT did not stop it
            wait_for_lines(out, 10, process)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "interrupted; every finished answer is saved: run the same command again to resume" in stderr
    assert "usage:" in stderr
    lines = out.read_text().splitlines()
    assert len(lines) == len(set(lines)) and all(json.loads(line)["response"] for line in lines)


def test_an_output_file_of_another_kind_is_not_resumed(run_cli, tmp_path):
    out = tmp_path / "other.jsonl"
    out.write_text('{"prompt_id": "hov1-001", "logprob": -3.0, "tokens": 2}\n')
    with LocalChatServer() as server:
        result = run_cli("generate", "--dataset", "hub-open-v1", "--endpoint", server.base_url, "--model", "m",
                         "--out", out)  # fmt: skip
    assert result.exit_code == 3
    assert f"{out}, line 1: cannot resume: line is not a generation output" in result.stderr
    assert server.requests == 0


def test_generation_bounds_its_options(run_cli, tmp_path):
    result = run_cli("generate", "--dataset", "hub-open-v1", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                     "--concurrency", "0", "--out", tmp_path / "x.jsonl")  # fmt: skip
    assert result.exit_code == 3 and "endpoint setting 'concurrency'" in result.stderr
    result = run_cli("generate", "--dataset", "hub-open-v1", "--out", tmp_path / "x.jsonl")
    assert result.exit_code == 5 and "no endpoint base_url or model" in result.stderr
    assert os.path.exists(tmp_path / "x.jsonl") is False
