"""Conversation log files: one `{"messages": [{"role", "content"}, ...]}` per line, optional `id` and `system`.

Every limit is checked before any metric runs, and a refusal names the line (and the message) at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import InvalidInputError
from evaluation.function_metrics.spec import ROLES
from evaluation.responses import parse_jsonl_records
from evaluation.textfile import decode_lines, read_bytes

MAX_LINE_CHARS = 2_000_000
MAX_CONVERSATIONS = 200_000
MAX_MESSAGES = 1_000
MAX_CONTENT_CHARS = 100_000
MAX_LABEL_CHARS = 200
TOP_LEVEL_KEYS = ("id", "system", "messages", "metadata")
MESSAGE_KEYS = ("role", "content", "name")
# C0 and C1 controls (tab, line feed and carriage return allowed in content) and lone surrogates.
CONTENT_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
LABEL_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class Message:
    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Conversation:
    """One line of the file. `id` defaults to the line number; `system` (a label) to None."""

    id: str
    system: str | None
    messages: tuple[Message, ...]
    line: int


def read_conversations(path: str | Path) -> list[Conversation]:
    return parse_conversations(read_bytes(Path(path)), name=path)


def parse_conversations(data: bytes, *, name: str | Path) -> list[Conversation]:
    """Validate a whole file; duplicate ids are refused, blank lines skipped."""
    lines = decode_lines(data, name=name, max_line_chars=MAX_LINE_CHARS)
    records = parse_jsonl_records(lines, name=name)
    if len(records) > MAX_CONVERSATIONS:
        raise InvalidInputError(f"{len(records):,} conversations; the limit is {MAX_CONVERSATIONS:,}", path=name)
    seen: dict[str, int] = {}
    conversations = []
    for number, record in records:
        conversation = _conversation(record, name=name, line=number)
        if conversation.id in seen:
            raise InvalidInputError(
                f"duplicate conversation id {conversation.id!r} (first on line {seen[conversation.id]})",
                path=name,
                line=number,
            )
        seen[conversation.id] = number
        conversations.append(conversation)
    return conversations


def _conversation(record: dict[str, Any], *, name: str | Path, line: int) -> Conversation:
    def fail(message: str) -> InvalidInputError:
        return InvalidInputError(message, path=name, line=line)

    unknown = sorted(str(key)[:40] for key in record if key not in TOP_LEVEL_KEYS)
    if unknown:
        raise fail(f"unknown field(s) {', '.join(map(repr, unknown))} (allowed: {', '.join(TOP_LEVEL_KEYS)})")
    if "messages" not in record:
        raise fail('no \'messages\': each line must be {"messages": [{"role": ..., "content": ...}, ...]}')
    conversation_id = _label(record.get("id"), "id", fail) or str(line)
    system = _label(record.get("system"), "system", fail)
    messages = record["messages"]
    if not isinstance(messages, list) or not messages:
        raise fail('\'messages\' must be a non-empty list of {"role", "content"} objects')
    if len(messages) > MAX_MESSAGES:
        raise fail(f"{len(messages):,} messages; the limit is {MAX_MESSAGES:,} per conversation")
    return Conversation(
        id=conversation_id,
        system=system,
        messages=tuple(_message(value, index, fail) for index, value in enumerate(messages)),
        line=line,
    )


def _label(value: object, field: str, fail: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and field == "id":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise fail(f"'{field}' must be a non-empty string")
    if len(value) > MAX_LABEL_CHARS:
        raise fail(f"'{field}' is {len(value):,} characters long; the limit is {MAX_LABEL_CHARS}")
    if LABEL_CONTROL.search(value):
        raise fail(f"'{field}' contains a control character")
    return value


def _message(value: object, index: int, fail: Any) -> Message:
    where = f"message {index + 1}"
    if not isinstance(value, dict):
        raise fail(f"{where} must be an object with 'role' and 'content'")
    unknown = sorted(str(key)[:40] for key in value if key not in MESSAGE_KEYS)
    if unknown:
        raise fail(f"{where} has unknown field(s) {', '.join(map(repr, unknown))} (allowed: {', '.join(MESSAGE_KEYS)})")
    role, content = value.get("role"), value.get("content")
    if role not in ROLES:
        shown = repr(role)[:60]
        raise fail(f"{where} has unknown role {shown} (allowed: {', '.join(ROLES)})")
    if not isinstance(content, str):
        raise fail(f"{where} ({role}) must have 'content' as a string")
    if len(content) > MAX_CONTENT_CHARS:
        raise fail(f"{where} ({role}) is {len(content):,} characters long; the limit is {MAX_CONTENT_CHARS:,}")
    bad = CONTENT_CONTROL.search(content)
    if bad is not None:
        raise fail(f"{where} ({role}) contains the control character U+{ord(bad.group()):04X}")
    return Message(role=role, content=content)
