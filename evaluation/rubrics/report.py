"""The results file of a rubric run: JSONL with a run header, one line per response, one per group."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluation.rubrics.grading import RubricResult, rubric_signature
from evaluation.rubrics.schema import Rubric
from evaluation.rubrics.summary import GroupSummary

FORMAT_VERSION = 1


def run_header(rubric: Rubric, *, judge: dict[str, Any], dataset: str | None, group_by: str | None) -> dict[str, Any]:
    """What produced the results: the rubric (whole, with its signature), the judge (never its key), the data."""
    return {
        "kind": "run",
        "format": FORMAT_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "rubric": rubric.to_dict(),
        "signature": rubric_signature(rubric),
        "judge": judge,
        "dataset": dataset,
        "group_by": group_by,
    }


def result_lines(
    header: dict[str, Any], results: Sequence[RubricResult], summaries: Sequence[GroupSummary]
) -> list[dict[str, Any]]:
    lines = [header]
    lines += [{"kind": "response", **result.to_dict()} for result in results]
    lines += [{"kind": "group", **summary.to_dict()} for summary in summaries]
    return lines


def write_jsonl(path: str | Path, lines: Sequence[dict[str, Any]]) -> None:
    """Written whole to a temporary file, then renamed: a crash never leaves half a results file."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)
