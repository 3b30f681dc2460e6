"""Response files: ChatEval-style text (one line per prompt, in order) or JSONL (`prompt_id`, `response`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from evaluation.dataset import Dataset
from evaluation.errors import InvalidInputError
from evaluation.textfile import decode_lines, read_bytes

ResponseFormat = Literal["auto", "text", "jsonl"]


def detect_format(name: str | Path, fmt: ResponseFormat) -> Literal["text", "jsonl"]:
    if fmt != "auto":
        return fmt
    return "jsonl" if str(name).lower().endswith((".jsonl", ".ndjson")) else "text"


ALLOW_EMPTY_HINT = "if empty responses are meant, say so: --allow-empty (on the hub: allow_empty)"
ALLOW_EMPTY_HELP = "Blank lines in a text response file are meant: empty responses (else refused by line)."


def parse_responses(
    data: bytes, *, dataset: Dataset, name: str | Path, fmt: ResponseFormat = "auto", allow_empty: bool = False
) -> list[str]:
    """Validate a response file against a dataset and return the responses in the dataset's prompt order.

    In a text file a blank (empty or whitespace-only) line is refused with its number, as it is more often a stray
    line than a meant answer, unless `allow_empty` says empty responses are meant. (In JSONL an empty "response"
    is written on purpose and accepted.)"""
    lines = decode_lines(data, name=name)
    if detect_format(name, fmt) == "jsonl":
        return _parse_jsonl(lines, dataset=dataset, name=name)
    blank = None if allow_empty else _first_blank(lines)
    if len(lines) != len(dataset):
        where = f"; line {blank} is blank" if blank is not None else ""
        raise InvalidInputError(
            f"expected {len(dataset)} lines (one response per prompt of dataset {dataset.name}), "
            f"found {len(lines)}{where}",
            path=name,
        )
    if blank is not None:
        raise InvalidInputError(f"blank line: an empty response; {ALLOW_EMPTY_HINT}", path=name, line=blank)
    return lines


def _first_blank(lines: list[str]) -> int | None:
    """The 1-based number of the first empty or whitespace-only line, or None (C-speed checks first: most files
    have none)."""
    if "" not in lines and not any(map(str.isspace, lines)):
        return None
    return next(number for number, line in enumerate(lines, start=1) if not line or line.isspace())


def read_responses(
    path: str | Path, *, dataset: Dataset, fmt: ResponseFormat = "auto", allow_empty: bool = False
) -> list[str]:
    return parse_responses(read_bytes(Path(path)), dataset=dataset, name=path, fmt=fmt, allow_empty=allow_empty)


def parse_jsonl_records(lines: list[str], *, name: str | Path) -> list[tuple[int, dict]]:
    """Parse JSONL lines into (line number, object) pairs; blank lines are skipped."""
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"not valid JSON ({exc.msg})", path=name, line=number) from exc
        except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
            raise InvalidInputError(f"not valid JSON ({exc})", path=name, line=number) from exc
        if not isinstance(value, dict):
            raise InvalidInputError("each line must be a JSON object", path=name, line=number)
        records.append((number, value))
    return records


def check_prompt_id(value: object, *, dataset: Dataset, seen: dict[str, int], name, number: int) -> int:
    """Return the dataset index of a record's prompt id, refusing unknown and duplicate ids."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise InvalidInputError("'prompt_id' must be a string", path=name, line=number)
    if value not in dataset.index_of:
        raise InvalidInputError(f"unknown prompt_id {value!r} for dataset {dataset.name}", path=name, line=number)
    if value in seen:
        raise InvalidInputError(f"duplicate prompt_id {value!r} (first on line {seen[value]})", path=name, line=number)
    seen[value] = number
    return dataset.index_of[value]


def check_complete(seen: dict[str, int], *, dataset: Dataset, name) -> None:
    missing = [pid for pid in dataset.prompt_ids if pid not in seen]
    if missing:
        shown = ", ".join(repr(pid) for pid in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InvalidInputError(
            f"{len(missing)} of {len(dataset)} prompts of dataset {dataset.name} have no entry: {shown}",
            path=name,
        )


def _parse_jsonl(lines: list[str], *, dataset: Dataset, name) -> list[str]:
    responses: list[str | None] = [None] * len(dataset)
    seen: dict[str, int] = {}
    for number, record in parse_jsonl_records(lines, name=name):
        unknown = sorted(set(record) - {"prompt_id", "response"})
        if unknown or "prompt_id" not in record or "response" not in record:
            raise InvalidInputError(
                "each line needs exactly the keys 'prompt_id' and 'response'"
                + (f" (unexpected: {', '.join(unknown)})" if unknown else ""),
                path=name,
                line=number,
            )
        index = check_prompt_id(record["prompt_id"], dataset=dataset, seen=seen, name=name, number=number)
        if not isinstance(record["response"], str):
            raise InvalidInputError("'response' must be a string", path=name, line=number)
        responses[index] = record["response"]
    check_complete(seen, dataset=dataset, name=name)
    return [r for r in responses if r is not None]
