"""`chateval generate` when the endpoint misbehaves: a clear message, a documented exit code, nothing lost."""

from __future__ import annotations

import json
import socket

import pytest

from evaluation.dataset import Prompt, Turn, write_dataset
from evaluation.llm.server import LocalChatServer
from tests.llm.conftest import KEY

FIELDS = dict(name="tiny", version="1", description="", source="", license="", citation="")


@pytest.fixture
def tiny(tmp_path):
    prompts = [
        Prompt(id=f"t{i}", context=(Turn(role="user", content=f"question {i}"),), references=(f"answer {i}",))
        for i in range(6)
    ]
    return write_dataset(tmp_path / "tiny", FIELDS, prompts)


@pytest.fixture
def fast_retries(tmp_path):
    """A per-run config file: retries that wait milliseconds, a short timeout, the key by variable name."""
    path = tmp_path / "endpoint.yaml"
    path.write_text(
        "base_url: http://placeholder/v1\nmodel: m\napi_key_env: TEST_JUDGE_KEY\nmax_retries: 2\n"
        "backoff_base_s: 0.01\nbackoff_max_s: 0.02\nretry_after_cap_s: 0.05\ntimeout_s: 0.3\nconcurrency: 2\n"
    )
    return path


@pytest.fixture
def generate(run_cli, tiny, fast_retries, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_JUDGE_KEY", KEY)
    out = tmp_path / "out.jsonl"

    def run(base_url: str, *extra: str):
        result = run_cli("generate", "--dataset", tiny.path, "--config", fast_retries, "--endpoint", base_url,
                         "--out", out, "--no-progress", *extra)  # fmt: skip
        assert KEY not in result.stdout + result.stderr
        return result

    run.out = out
    return run


def written(out) -> list[str]:
    return [json.loads(line)["prompt_id"] for line in out.read_text().splitlines()] if out.exists() else []


def test_unreachable(generate):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = generate(f"http://127.0.0.1:{port}/v1")
    assert result.exit_code == 6
    assert "error: 6 of 6 responses failed" in result.stderr
    assert f"cannot reach http://127.0.0.1:{port}/v1/chat/completions" in result.stderr
    assert "run the same command again" in result.stderr


def test_wrong_key(generate, monkeypatch):
    with LocalChatServer(expected_key="sk-the-right-one-1234567890") as server:
        result = generate(server.base_url)
    assert result.exit_code == 7
    assert "refused the API key (HTTP 401)" in result.stderr
    assert server.counts["unauthorized"] <= 2  # concurrency 2; the rest were not sent


def test_rate_limited_then_succeeds(generate):
    with LocalChatServer(expected_key=KEY) as server:
        server.inject("rate_limit", times=3, retry_after_s=0.01)
        result = generate(server.base_url)
    assert result.exit_code == 0, result.stderr
    assert sorted(written(generate.out)) == [f"t{i}" for i in range(6)]
    assert "3 retries" in result.stderr and server.counts["rate_limit"] == 3


def test_rate_limit_exhausted_then_resumed(generate):
    with LocalChatServer(expected_key=KEY) as server:
        server.inject("rate_limit", retry_after_s=0.01)
        result = generate(server.base_url)
        assert result.exit_code == 6
        assert (
            "6 of 6 responses failed" in result.stderr
            and "rate-limiting (HTTP 429) after 3 attempt(s)" in result.stderr
        )
        server.clear_faults()
        assert generate(server.base_url).exit_code == 0
    assert sorted(written(generate.out)) == [f"t{i}" for i in range(6)]


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("non_json", "answered 200 with a body that is not JSON"),
        ("empty_choices", "empty or missing 'choices' list"),
    ],
)
def test_malformed_answer_fails_that_prompt_only(generate, kind, message):
    with LocalChatServer(expected_key=KEY) as server:
        server.inject(kind, times=1)
        result = generate(server.base_url)
        assert result.exit_code == 6
        assert "error: 1 of 6 responses failed" in result.stderr and message in result.stderr
        assert len(written(generate.out)) == 5
        again = generate(server.base_url)
    assert again.exit_code == 0 and "1 written, 5 already in" in again.stderr
    assert sorted(written(generate.out)) == [f"t{i}" for i in range(6)]


def test_timeout(generate):
    with LocalChatServer(expected_key=KEY) as server:
        server.inject("slow", delay_s=1.0)
        result = generate(server.base_url)
    assert result.exit_code == 6
    assert "no answer from" in result.stderr and "within 0.3 s (3 attempt(s))" in result.stderr
