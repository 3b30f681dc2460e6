"""Which result columns a leaderboard shows: every column by default, or those chosen with `columns` (repeated, or
comma-separated) so that a link shares the choice. A well-formed key the board does not have (a column gone since
the link was made) is left out rather than refused, as an unknown `sort` sorts nothing."""

from __future__ import annotations

from typing import Any

from hub.errors import BadRequest

MAX_CHOSEN = 60
MAX_KEY = 120  # characters of one column key (metric names, human:ID, rubric:ID@V, judge:ID, irt)


def parse_columns(raw: list[str] | None) -> list[str] | None:
    """`["bleu-2", "irt,human:all"]` -> ["bleu-2", "irt", "human:all"] (duplicates dropped, order kept); None when
    no column is named (every column shown)."""
    keys: list[str] = []
    for value in raw or []:
        for part in value.split(","):
            key = part.strip()
            if not key:
                continue
            if len(key) > MAX_KEY or not key.isprintable():
                raise BadRequest(f"columns: each column is at most {MAX_KEY} printable characters", field="columns")
            if key not in keys:
                keys.append(key)
    if len(keys) > MAX_CHOSEN:
        raise BadRequest(f"columns: choose at most {MAX_CHOSEN} columns", field="columns")
    return keys or None


def choosable(board: dict[str, Any]) -> list[dict[str, str]]:
    """Every result column of the board, as key and label, in the table's order."""
    found = [{"key": c["metric"], "label": c["metric"]} for c in board["columns"]]
    found += [{"key": c["key"], "label": c["label"]} for c in board["human_columns"]]
    if board["irt_column"]:
        found.append({"key": board["irt_column"]["key"], "label": board["irt_column"]["label"]})
    found += [{"key": c["key"], "label": f"rubric {c['rubric']}"} for c in board["rubric_columns"]]
    found += [{"key": c["key"], "label": f"judge {c['judge']}"} for c in board["judge_columns"]]
    return found


def apply_choice(board: dict[str, Any], chosen: list[str] | None) -> dict[str, Any]:
    """The board with `choosable` (every column, each with `shown`) and `chosen` (None: all shown), and only the
    chosen columns in its column lists and row cells; rows keep their order and ranks (sorting may use a hidden
    column)."""
    every = choosable(board)
    keep = {c["key"] for c in every} if chosen is None else set(chosen)
    choice = [{**c, "shown": c["key"] in keep} for c in every]
    if chosen is None:
        return {**board, "choosable": choice, "chosen": None}
    rows = [
        {
            **row,
            "scores": {k: v for k, v in row["scores"].items() if k in keep},
            "human": {k: v for k, v in row["human"].items() if k in keep},
            "irt": row["irt"] if "irt" in keep else None,
            "rubrics": {k: v for k, v in row["rubrics"].items() if k in keep},
            "judges": {k: v for k, v in row["judges"].items() if k in keep},
        }
        for row in board["rows"]
    ]
    irt = board["irt_column"]
    return {
        **board,
        "choosable": choice,
        "chosen": [c["key"] for c in every if c["key"] in keep],
        "columns": [c for c in board["columns"] if c["metric"] in keep],
        "human_columns": [c for c in board["human_columns"] if c["key"] in keep],
        "irt_column": irt if irt is not None and irt["key"] in keep else None,
        "rubric_columns": [c for c in board["rubric_columns"] if c["key"] in keep],
        "judge_columns": [c for c in board["judge_columns"] if c["key"] in keep],
        "rows": rows,
    }
