"""Ratings files as judgements: the hub's `ratings` download (JSONL with a header line, or CSV), a minimal
third-party file, and the original ChatEval's votes.csv."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from evaluation import csv_cells
from evaluation.errors import InvalidInputError
from evaluation.judgements import (
    RATINGS_SCHEMA_VERSION,
    REQUIRED_FIELDS,
    VOTE_OUTCOMES,
    VOTES_COLUMNS,
    Judgements,
    JudgementsBuilder,
)
from evaluation.responses import parse_jsonl_records
from evaluation.textfile import decode_lines, read_bytes


def _jsonl_records(lines: list[str], *, name: str) -> Iterator[tuple[int, dict]]:
    """The JSONL objects with their line numbers; the export's header line is checked and skipped."""
    for number, value in parse_jsonl_records(lines, name=name):
        if "kind" in value and "schema_version" in value and "system_a" not in value:
            _check_header(value, name=name, line=number)
            continue
        yield number, value


def _check_header(header: dict, *, name: str, line: int) -> None:
    if header.get("kind") != "ratings":
        raise InvalidInputError(f"file kind is {header.get('kind')!r}, expected 'ratings'", path=name, line=line)
    version = header.get("schema_version")
    if version != RATINGS_SCHEMA_VERSION:
        raise InvalidInputError(
            f"ratings schema version {version!r} is not supported (expected {RATINGS_SCHEMA_VERSION})",
            path=name,
            line=line,
        )


def _csv_rows(text: str, *, name: str, required: Sequence[str]) -> Iterator[tuple[int, dict]]:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise InvalidInputError("file is empty", path=name)
    header = [column.strip().lstrip("\ufeff") for column in header]
    missing = [column for column in required if column not in header]
    if missing:
        raise InvalidInputError(f"missing column(s): {', '.join(missing)}", path=name, line=1)
    for row in reader:
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InvalidInputError(
                f"row has {len(row)} cells but the header has {len(header)}", path=name, line=reader.line_num
            )
        yield reader.line_num, dict(zip(header, row, strict=True))


def _read_text(path: Path) -> tuple[str, list[str]]:
    lines = decode_lines(read_bytes(path), name=path, max_line_chars=1_000_000)
    return "\n".join(lines) + "\n", lines


def read_ratings(path: str | Path, *, qualify_prompts: bool | None = None) -> Judgements:
    """Read a ratings file: the hub's export (JSONL with a header line, or CSV) or a minimal third-party file.

    The format follows the suffix (.jsonl/.json or .csv), else the first character ("{" means JSONL).
    """
    path = Path(path)
    text, lines = _read_text(path)
    suffix = path.suffix.lower()
    is_jsonl = suffix in (".jsonl", ".json") or (suffix != ".csv" and text.lstrip().startswith("{"))
    builder = JudgementsBuilder()
    if is_jsonl:
        rows: Iterable[tuple[int, dict]] = _jsonl_records(lines, name=str(path))
    else:
        rows = (  # the hub quotes text cells that start like formulas (evaluation/csv_cells.py): unquote them
            (number, {key: csv_cells.restore(cell) for key, cell in record.items()})
            for number, record in _csv_rows(text, name=str(path), required=REQUIRED_FIELDS)
        )
    for number, record in rows:
        builder.add(record, name=str(path), line=number)
    judgements = builder.build(qualify_prompts=qualify_prompts)
    if len(judgements) == 0:
        raise InvalidInputError("no pairwise judgements (item_kind 'pair') in the file", path=path)
    return judgements


def _read_runs(path: Path) -> dict[str, tuple[str, str, str]]:
    text, _ = _read_text(path)
    runs = {}
    for number, row in _csv_rows(text, name=str(path), required=("run", "evalset", "model_1", "model_2")):
        if row["run"] in runs:
            raise InvalidInputError(f"run {row['run']!r} is listed twice", path=path, line=number)
        runs[row["run"]] = (row["evalset"], row["model_1"], row["model_2"])
    return runs


def read_chateval_votes(path: str | Path, runs_path: str | Path | None = None) -> Judgements:
    """Read the original ChatEval votes.csv (one row per crowd vote) as judgements.

    system_a = model_1, system_b = model_2; vote 0 (model_1 better) -> +1, 1 -> -1, -1 (tie) -> 0. Prompts are
    labelled "EVALSET/prompt", experiments are runs and raters are workers. With runs_path (runs.csv), every vote's
    run must be listed there with the same evaluation set and models; experiments then follow the runs file order.
    """
    path = Path(path)
    runs = _read_runs(Path(runs_path)) if runs_path is not None else None
    text, _ = _read_text(path)
    builder = JudgementsBuilder()
    for run in runs or {}:
        builder.index("experiments", run)
    for number, row in _csv_rows(text, name=str(path), required=VOTES_COLUMNS):
        vote = row["vote"].strip()
        if vote not in VOTE_OUTCOMES:
            raise InvalidInputError(f"unknown vote {vote!r}; expected 0, 1 or -1", path=path, line=number)
        if runs is not None:
            expected = runs.get(row["run"])
            if expected is None:
                raise InvalidInputError(f"run {row['run']!r} is not in {runs_path}", path=path, line=number)
            if expected != (row["evalset"], row["model_1"], row["model_2"]):
                raise InvalidInputError(
                    f"run {row['run']!r} compares {expected[1]!r} and {expected[2]!r} on {expected[0]} in {runs_path}",
                    path=path,
                    line=number,
                )
        record = {
            "prompt_id": row["prompt"],
            "system_a": row["model_1"],
            "system_b": row["model_2"],
            "outcome": {1: "A", -1: "B", 0: "tie"}[VOTE_OUTCOMES[vote]],
            "rater": row["worker"],
            "experiment_id": row["run"],
            "dataset": row["evalset"],
        }
        builder.add(record, name=str(path), line=number)
    judgements = builder.build(qualify_prompts=True)
    if len(judgements) == 0:
        raise InvalidInputError("no votes in the file", path=path)
    return judgements


__all__ = ["read_chateval_votes", "read_ratings"]
