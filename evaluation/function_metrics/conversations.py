"""Conversation log files: one `{"messages": [{"role", "content"}, ...]}` per line, optional `id` and `system`.

Every limit is checked before any metric runs, and a refusal names the line (and the message) at fault.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import InvalidInputError, NotFoundError
from evaluation.function_metrics.spec import ROLES
from evaluation.settings import get_settings

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


class ConversationLog:
    """A conversation file checked whole on opening, then read again line by line when iterated, so scoring
    holds one chunk of conversations in memory, not the file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.count = sum(1 for _ in self)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Conversation]:
        if not self.path.is_file():
            raise NotFoundError("file not found", path=self.path)
        limit = get_settings().max_file_bytes
        size = self.path.stat().st_size
        if size > limit:
            raise InvalidInputError(f"file is {size:,} bytes; the limit is {limit:,} bytes", path=self.path)
        with self.path.open("rb") as handle:
            yield from _parse_lines(handle, name=self.path)


def read_conversations(path: str | Path) -> ConversationLog:
    return ConversationLog(path)


def parse_conversations(data: bytes, *, name: str | Path) -> list[Conversation]:
    return list(_parse_lines(io.BytesIO(data), name=name))


def _parse_lines(lines: Iterable[bytes], *, name: str | Path) -> Iterator[Conversation]:
    """Conversations line by line (split on "\n" only, as evaluation.textfile does); duplicate ids are refused,
    blank lines skipped, an empty file refused."""
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        text = _decode(raw, name=name, line=number)
        if not text.strip():
            continue
        if len(seen) >= MAX_CONVERSATIONS:
            raise InvalidInputError(f"more than {MAX_CONVERSATIONS:,} conversations", path=name, line=number)
        try:
            record = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or e.g. an integer beyond Python's digit limit
            raise InvalidInputError(f"not valid JSON ({getattr(exc, 'msg', exc)})", path=name, line=number) from exc
        if not isinstance(record, dict):
            raise InvalidInputError("each line must be a JSON object", path=name, line=number)
        conversation = _conversation(record, name=name, line=number)
        if conversation.id in seen:
            raise InvalidInputError(
                f"duplicate conversation id {conversation.id!r} (first on line {seen[conversation.id]})",
                path=name,
                line=number,
            )
        seen[conversation.id] = number
        yield conversation
    if not seen:
        raise InvalidInputError("file is empty", path=name)


def _decode(raw: bytes, *, name: str | Path, line: int) -> str:
    if b"\x00" in raw:
        raise InvalidInputError("binary data (NUL byte) found; expected UTF-8 text", path=name, line=line)
    if len(raw) > 4 * MAX_LINE_CHARS + 4:  # more characters than the limit, whatever the encoding
        raise InvalidInputError(f"line is longer than {MAX_LINE_CHARS:,} characters", path=name, line=line)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start} of the line)", path=name, line=line
        ) from exc
    text = text.removeprefix("\ufeff") if line == 1 else text
    text = text.removesuffix("\n").removesuffix("\r")
    if len(text) > MAX_LINE_CHARS:
        raise InvalidInputError(
            f"line is {len(text):,} characters long; the limit is {MAX_LINE_CHARS:,}", path=name, line=line
        )
    return text


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
