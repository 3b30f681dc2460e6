"""Bad conversation logs: each is refused before any metric runs, naming the line, with exit code 3."""

from __future__ import annotations

import json

import pytest

from evaluation.errors import InvalidInputError
from evaluation.function_metrics.conversations import (
    MAX_CONTENT_CHARS,
    MAX_LABEL_CHARS,
    MAX_LINE_CHARS,
    MAX_MESSAGES,
    parse_conversations,
)

GOOD = {"id": "ok", "messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello."}]}


def message(role="user", content="hello", **extra):
    return {"role": role, "content": content, **extra}


BAD_LINES = [
    ("not json", '{"messages": [', "not valid JSON"),
    ("not an object", "[1, 2]", "each line must be a JSON object"),
    ("missing messages", {"id": "x", "turns": []}, "unknown field(s) 'turns'"),
    ("missing messages only", {"id": "x"}, "no 'messages'"),
    ("empty messages", {"messages": []}, "'messages' must be a non-empty list"),
    ("messages not a list", {"messages": "hello"}, "'messages' must be a non-empty list"),
    ("message not an object", {"messages": ["hello"]}, "message 1 must be an object"),
    ("unknown role", {"messages": [message(), message(role="moderator")]}, "message 2 has unknown role 'moderator'"),
    ("missing role", {"messages": [{"content": "x"}]}, "message 1 has unknown role None"),
    ("content not text", {"messages": [message(content=["part"])]}, "must have 'content' as a string"),
    ("unknown message key", {"messages": [message(tool_calls=[])]}, "unknown field(s) 'tool_calls'"),
    ("escaped NUL", {"messages": [message(content="a\u0000b")]}, "control character U+0000"),
    ("escape control", {"messages": [message(content="a\u001bb")]}, "control character U+001B"),
    ("too long", {"messages": [message(content="x" * (MAX_CONTENT_CHARS + 1))]}, "the limit is 100,000"),
    ("too many", {"messages": [message()] * (MAX_MESSAGES + 1)}, f"the limit is {MAX_MESSAGES:,} per conversation"),
    ("long id", {"id": "i" * (MAX_LABEL_CHARS + 1), "messages": [message()]}, "'id' is 201 characters long"),
    ("id control", {"id": "a\nb", "messages": [message()]}, "'id' contains a control character"),
    ("system not text", {"system": 3, "messages": [message()]}, "'system' must be a non-empty string"),
    ("duplicate id", {"id": "ok", "messages": [message()]}, "duplicate conversation id 'ok' (first on line 1)"),
]


@pytest.mark.parametrize(("case", "line", "message_part"), BAD_LINES, ids=[case for case, _, _ in BAD_LINES])
def test_a_bad_line_is_refused_naming_line_and_problem(run_cli, write_log, case, line, message_part):
    path = write_log([GOOD, line, GOOD | {"id": "later"}])
    result = run_cli("evaluate", "--conversations", path)
    assert result.exit_code == 3, (result.stdout, result.stderr)
    error = " ".join(result.stderr.split())
    assert "logs.jsonl, line 2: " in error
    assert message_part in error
    assert result.stdout == ""  # nothing scored


def test_a_raw_nul_byte_and_bad_utf8_name_their_line(tmp_path):
    data = (json.dumps(GOOD) + "\n").encode() + b'{"messages": [{"role": "user", "content": "a\x00b"}]}\n'
    with pytest.raises(InvalidInputError, match="line 2: binary data"):
        parse_conversations(data, name="logs.jsonl")
    data = (json.dumps(GOOD) + "\n").encode() + b'{"messages": [{"role": "user", "content": "\xff"}]}\n'
    with pytest.raises(InvalidInputError, match="line 2: not valid UTF-8"):
        parse_conversations(data, name="logs.jsonl")


def test_a_line_over_the_line_limit_is_refused_naming_it():
    many = {"messages": [message(content="x" * 50_000)] * (MAX_LINE_CHARS // 50_000 + 1)}
    data = (json.dumps(GOOD) + "\n" + json.dumps(many) + "\n").encode()
    with pytest.raises(InvalidInputError, match=f"line 2: line is .* characters long; the limit is {MAX_LINE_CHARS:,}"):
        parse_conversations(data, name="logs.jsonl")


def test_an_empty_or_missing_file_is_refused(run_cli, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    result = run_cli("evaluate", "--conversations", empty)
    assert result.exit_code == 3 and "file is empty" in result.stderr
    result = run_cli("evaluate", "--conversations", tmp_path / "absent.jsonl")
    assert result.exit_code == 4 and "file not found" in result.stderr


def test_defaults_and_optional_fields(write_log):
    path = write_log([{"messages": [message()]}, {**GOOD, "id": 7, "system": "bot", "metadata": {"k": 1}}])
    first, second = parse_conversations(path.read_bytes(), name=path)
    assert (first.id, first.system, first.line) == ("1", None, 1)  # the line number names it
    assert (second.id, second.system, len(second.messages)) == ("7", "bot", 2)


def test_response_file_options_are_refused_with_conversations(run_cli, write_log):
    result = run_cli("evaluate", "--conversations", write_log([GOOD]), "--dataset", "hub-open-v1")
    assert result.exit_code == 2
    assert "drop --dataset" in " ".join(result.stderr.split())
