"""The local OpenAI-compatible server: reply rules from YAML, echoed log-probabilities, and `chateval judge-server`."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess

import httpx
import pytest

from evaluation.errors import InvalidInputError
from evaluation.llm.client import ChatClient
from evaluation.llm.rules import ReplyRules
from evaluation.llm.server import LocalChatServer
from tests.llm.conftest import CHATEVAL, fast_config
from tests.llm.processes import child_process, ctrl_c_reaches_child, first_line

RULES = """
default: "No idea."
rules:
  - pattern: "(?i)which is better.*A: (?P<a>.+?) B:"
    reply: "Verdict: A because \\\\g<a>"
  - pattern: "^Grade (\\\\d)"
    reply: "Grade: \\\\1/5"
"""


def test_rules_from_yaml_pick_the_first_matching_reply(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    with LocalChatServer(path) as server:
        client = ChatClient(fast_config(server.base_url, api_key=None))
        ask = lambda text: client.complete([{"role": "user", "content": text}]).text  # noqa: E731
        assert ask("Which is better? A: short answer B: long answer") == "Verdict: A because short answer"
        assert ask("Grade 4 please") == "Grade: 4/5"
        assert ask("hello") == "No idea."
        # The rule reads the LAST user message only.
        messages = [
            {"role": "user", "content": "Grade 1"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "hello"},
        ]
        assert client.complete(messages).text == "No idea."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules:\n  - pattern: '(unclosed'\n    reply: x\n", r"rules\[0\]\.pattern: not a valid regex"),
        ("rules:\n  - pattern: 'a(b)'\n    reply: '\\2'\n", r"rules\[0\]\.reply: refers to group '2'"),
        ("rules:\n  - pattern: 'a'\n", r"rules\.0\.reply: Field required"),
        ("faults:\n  - kind: meteor\n", r"faults\.0\.kind"),
        ("colour: red\n", "colour"),
    ],
)
def test_bad_rules_files_name_the_rule(tmp_path, text, message):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=message):
        ReplyRules.from_file(path)


def independent_logprob(token: str) -> float:
    return -(0.5 + 5.0 * int(hashlib.sha256(token.encode()).hexdigest()[:8], 16) / 2**32)


def test_completions_echo_gives_deterministic_token_logprobs():
    with LocalChatServer() as server:
        body = {
            "model": "m",
            "prompt": "User: hi\nAssistant: fine thanks",
            "echo": True,
            "logprobs": 0,
            "max_tokens": 0,
        }
        data = httpx.post(server.base_url + "/completions", json=body).json()
    detail = data["choices"][0]["logprobs"]
    assert detail["tokens"] == ["User:", " hi", "\nAssistant:", " fine", " thanks"]
    assert detail["text_offset"] == [0, 5, 8, 19, 24]
    assert detail["token_logprobs"][0] is None
    assert detail["token_logprobs"][1:] == [independent_logprob(t) for t in detail["tokens"][1:]]


def test_judge_server_command_serves_until_interrupted(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    with child_process(
        [CHATEVAL, "judge-server", "--rules", str(rules), "--port", "0", "--latency-ms", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=ctrl_c_reaches_child,
    ) as process:  # killed at the end of the block if still running (SIGINT did not stop it, or a step failed)
        try:
            line = first_line(process)
            base_url = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line).group(1)
            answer = httpx.post(
                base_url + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "Grade 3"}]},
                timeout=30,
            ).json()
            assert answer["choices"][0]["message"]["content"] == "Grade: 3/5"
        finally:
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "stopped after 1 request(s)" in stderr
