"""Judge files: a judge's judgements written as the hub's ratings download (JSONL, header line first) with the
judge's own columns (evaluation.judges.run), and read back, every field checked, for the report card."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import InvalidInputError
from evaluation.judgements import RATINGS_SCHEMA_VERSION
from evaluation.judges.run import FIELDS, JUDGE_BACKEND, ORDER_STATES, UNGRADED_KIND
from evaluation.judges.verdicts import Verdict
from evaluation.responses import parse_jsonl_records
from evaluation.textfile import decode_lines, read_bytes

MAX_LABEL_CHARS = 1_000
MAX_TOKENS = 10_000_000


def write_judge_file(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write the rows (header line first, as the hub's download); returns the number of rows."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        header = {"schema_version": RATINGS_SCHEMA_VERSION, "kind": "ratings", "fields": list(FIELDS)}
        handle.write(json.dumps(header) + "\n")
        for row in rows:
            handle.write(json.dumps({name: row.get(name) for name in FIELDS}, ensure_ascii=False) + "\n")
            count += 1
    return count


@dataclass(frozen=True)
class JudgeRecord:
    """One pair a judge was given; outcome None when it could not grade it."""

    dataset: str
    prompt_id: str
    system_a: str
    """Identity: the hub's system id as text when the file carries ids, else the name."""
    system_b: str
    name_a: str
    name_b: str
    outcome: Verdict | None
    auto_tie: bool
    order_ab: str | None
    order_ba: str | None
    tokens_a: int
    tokens_b: int


@dataclass(frozen=True)
class JudgeFile:
    rater: str
    keyed_by_id: bool
    records: tuple[JudgeRecord, ...]


class _Row:
    """Typed access to one JSON row, errors naming the file, line and field."""

    def __init__(self, record: Mapping[str, Any], name: str, line: int):
        self.record, self.name, self.line = record, name, line

    def fail(self, message: str) -> InvalidInputError:
        return InvalidInputError(message, path=self.name, line=self.line)

    def text(self, field: str) -> str:
        value = self.record.get(field)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL_CHARS:
            raise self.fail(f"{field!r} must be a non-empty string of at most {MAX_LABEL_CHARS} characters")
        return value.strip()

    def choice(self, field: str, allowed: Iterable[object]) -> Any:
        value = self.record.get(field)
        allowed = tuple(allowed)
        if value not in allowed:
            raise self.fail(f"{field!r} is {value!r}; expected one of {', '.join(map(repr, allowed))}")
        return value

    def count(self, field: str) -> int:
        value = self.record.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
            raise self.fail(f"{field!r} must be a whole number from 0 to {MAX_TOKENS:,}, not {value!r}")
        return value

    def system_id(self, field: str) -> str | None:
        value = self.record.get(field)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**18:
            raise self.fail(f"{field!r} must be a whole number or null, not {value!r}")
        return str(value)


def _record(row: _Row) -> JudgeRecord:
    if row.record.get("backend") != JUDGE_BACKEND:
        raise row.fail(f"backend is {row.record.get('backend')!r}, not {JUDGE_BACKEND!r}: not a judge's judgement")
    kind = row.choice("item_kind", ("pair", UNGRADED_KIND))
    outcome = row.choice("outcome", (None,) if kind == UNGRADED_KIND else ("A", "B", "tie"))
    auto_tie = row.choice("auto_tie", (True, False))
    states = (*ORDER_STATES, None) if auto_tie else ORDER_STATES
    name_a, name_b = row.text("system_a"), row.text("system_b")
    id_a, id_b = row.system_id("system_a_id"), row.system_id("system_b_id")
    if (id_a is None) != (id_b is None):
        raise row.fail("give both system_a_id and system_b_id, or neither")
    system_a, system_b = id_a or name_a, id_b or name_b
    if system_a == system_b:
        raise row.fail(f"system_a and system_b are both {system_a!r}")
    return JudgeRecord(
        dataset=row.text("dataset"),
        prompt_id=row.text("prompt_id"),
        system_a=system_a,
        system_b=system_b,
        name_a=name_a,
        name_b=name_b,
        outcome=outcome,
        auto_tie=auto_tie,
        order_ab=row.choice("judge_order_ab", states),
        order_ba=row.choice("judge_order_ba", states),
        tokens_a=row.count("response_a_tokens"),
        tokens_b=row.count("response_b_tokens"),
    )


def read_judge_file(path: str | Path) -> JudgeFile:
    """Read a file written by `chateval judge pairwise`: one judge, systems all by id or all by name."""
    path = Path(path)
    name = str(path)
    lines = decode_lines(read_bytes(path), name=path, max_line_chars=1_000_000)
    records: list[JudgeRecord] = []
    rater: str | None = None
    keyed: bool | None = None
    for number, value in parse_jsonl_records(lines, name=path):
        if "kind" in value and "schema_version" in value and "system_a" not in value:
            if value.get("kind") != "ratings" or value.get("schema_version") != RATINGS_SCHEMA_VERSION:
                raise InvalidInputError("header is not a ratings file of schema version 1", path=name, line=number)
            continue
        row = _Row(value, name, number)
        this_rater = row.text("rater")
        if rater is not None and this_rater != rater:
            raise row.fail(f"a second judge {this_rater!r} (the file starts with {rater!r}); one judge per file")
        rater = this_rater
        record = _record(row)
        row_keyed = value.get("system_a_id") is not None
        if keyed is not None and row_keyed != keyed:
            raise row.fail("system ids are given on some rows only; give every row its system ids or none")
        keyed = row_keyed
        records.append(record)
    if not records or rater is None:
        raise InvalidInputError("no judge judgements in the file", path=name)
    return JudgeFile(rater=rater, keyed_by_id=bool(keyed), records=tuple(records))
