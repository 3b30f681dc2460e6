"""Judge files read back with every field checked: a bad row is refused naming the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.errors import InvalidInputError
from evaluation.judges.files import read_judge_file, write_judge_file
from evaluation.judges.run import FIELDS

GOOD = {
    **dict.fromkeys(FIELDS),
    "dataset": "d", "prompt_id": "p1", "item_kind": "pair", "system_a": "x", "system_b": "y", "outcome": "A",
    "auto_tie": False, "rater": "judge:m|pairwise-v1|h", "backend": "judge", "judge_order_ab": "A",
    "judge_order_ba": "A", "judge_consistent": True, "response_a_tokens": 3, "response_b_tokens": 4,
}  # fmt: skip


def write(tmp_path: Path, *changes: dict) -> Path:
    path = tmp_path / "judge.jsonl"
    write_judge_file(path, [GOOD, *({**GOOD, "prompt_id": f"p{n + 2}", **c} for n, c in enumerate(changes))])
    return path


def test_round_trip(tmp_path):
    ungraded = {"item_kind": "ungraded", "outcome": None, "judge_order_ab": "error", "judge_consistent": None}
    judge = read_judge_file(write(tmp_path, ungraded, {"auto_tie": True, "outcome": "tie", "judge_order_ab": None,
                                                       "judge_order_ba": None}))  # fmt: skip
    assert judge.rater == GOOD["rater"] and not judge.keyed_by_id
    assert [(r.prompt_id, r.outcome, r.order_ab, r.auto_tie) for r in judge.records] == [
        ("p1", "A", "A", False), ("p2", None, "error", False), ("p3", "tie", None, True)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"backend": "hub"}, "backend is 'hub', not 'judge': not a judge's judgement"),
        ({"outcome": "left"}, "'outcome' is 'left'; expected one of 'A', 'B', 'tie'"),
        ({"item_kind": "ungraded"}, "'outcome' is 'A'; expected one of None"),
        ({"item_kind": "attention"}, "'item_kind' is 'attention'"),
        ({"judge_order_ba": "maybe"}, "'judge_order_ba' is 'maybe'"),
        ({"judge_order_ab": None}, "'judge_order_ab' is None"),  # only automatic ties have no verdicts
        ({"response_a_tokens": -1}, "'response_a_tokens' must be a whole number from 0 to 10,000,000"),
        ({"response_b_tokens": "4"}, "'response_b_tokens' must be a whole number"),
        ({"system_b": "x"}, "system_a and system_b are both 'x'"),
        ({"system_a": ""}, "'system_a' must be a non-empty string"),
        ({"prompt_id": "p" * 1001}, "'prompt_id' must be a non-empty string of at most 1000 characters"),
        ({"rater": "judge:other|pairwise-v1|h"}, "a second judge 'judge:other|pairwise-v1|h'"),
        ({"system_a_id": 4}, "give both system_a_id and system_b_id, or neither"),
        ({"system_a_id": 4, "system_b_id": 5}, "system ids are given on some rows only"),
        ({"system_a_id": True, "system_b_id": 5}, "'system_a_id' must be a whole number or null"),
        ({"auto_tie": "yes"}, "'auto_tie' is 'yes'"),
    ],
)
def test_bad_rows_are_refused_naming_the_line(tmp_path, change, message):
    path = write(tmp_path, change)
    with pytest.raises(InvalidInputError) as error:
        read_judge_file(path)
    assert f"{path}, line 3: " in str(error.value)  # the header is line 1, the good row line 2
    assert message in str(error.value)


def test_other_files_are_refused(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"schema_version": 1, "kind": "scores", "fields": []}) + "\n")
    with pytest.raises(InvalidInputError, match="line 1: header is not a ratings file"):
        read_judge_file(path)
    path.write_text(json.dumps({"schema_version": 1, "kind": "ratings", "fields": []}) + "\n")
    with pytest.raises(InvalidInputError, match="no judge judgements in the file"):
        read_judge_file(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(InvalidInputError, match="line 1: each line must be a JSON object"):
        read_judge_file(path)
