"""Reading judgements: the hub's ratings export (JSONL and CSV), minimal files, and the original ChatEval votes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from evaluation.errors import InvalidInputError
from evaluation.judgements import from_records
from evaluation.ratings_files import read_chateval_votes, read_ratings

EXPORT_FIELDS = [
    "rating_id",
    "experiment_id",
    "dataset",
    "dataset_fingerprint",
    "prompt_id",
    "item_id",
    "item_kind",
    "system_a",
    "system_b",
    "system_a_id",
    "system_b_id",
    "left",
    "choice",
    "outcome",
    "auto_tie",
    "expected",
    "rater",
    "backend",
    "task_id",
    "assignment_id",
    "external_assignment_id",
    "created_at",
    "submitted_at",
    "seconds_on_task",
    "excluded",
    "exclusion_reason",
]


def _rating(rating_id: int, **values) -> dict:
    row: dict = dict.fromkeys(EXPORT_FIELDS)
    row.update(
        rating_id=rating_id,
        experiment_id=7,
        dataset="ncm",
        prompt_id="p1",
        item_kind="pair",
        system_a="alpha",
        system_b="beta",
        left="A",
        choice="left",
        outcome="A",
        auto_tie=False,
        rater="r1",
        backend="hub",
        excluded=False,
    )
    row.update(values)
    return row


RATINGS = [
    _rating(1),
    _rating(2, left="B", choice="left", outcome="B", rater="r2"),
    _rating(3, outcome="tie", choice="both_good", prompt_id="p2"),
    _rating(4, outcome="tie", choice=None, left=None, rater=None, auto_tie=True, prompt_id="p2"),
    _rating(5, item_kind="attention", expected="A", prompt_id="check"),
    _rating(6, rater="r3", excluded=True, exclusion_reason="low agreement", system_a="beta", system_b="gamma"),
]


def _write_jsonl(path: Path, rows: list[dict], *, header: bool = True) -> Path:
    lines = [json.dumps({"schema_version": 1, "kind": "ratings", "fields": EXPORT_FIELDS})] if header else []
    lines += [json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _write_csv(path: Path, rows: list[dict], fields: list[str] = EXPORT_FIELDS) -> Path:
    def cell(value):
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return value

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(fields)
        for row in rows:
            writer.writerow([cell(row.get(f)) for f in fields])
    return path


def _check_export(j) -> None:
    assert len(j) == 5  # the attention check is not a judgement
    assert j.systems == ("alpha", "beta", "gamma")
    assert j.prompts == ("p1", "p2")  # one dataset: prompt ids are not qualified
    assert j.outcome.tolist() == [1, -1, 0, 0, 1]
    assert j.auto_tie.tolist() == [False, False, False, True, False]
    assert j.left_is_a.tolist() == [1, 0, 1, -1, 1]
    assert j.rater.tolist() == [0, 1, 0, -1, 2]
    assert j.raters == ("r1", "r2", "r3")
    assert j.excluded.tolist() == [False, False, False, False, True]
    assert j.experiments == ("7",)
    assert j.system_a.dtype == np.int32 and j.outcome.dtype == np.int8


def test_reads_jsonl_export(tmp_path: Path):
    _check_export(read_ratings(_write_jsonl(tmp_path / "ratings.jsonl", RATINGS)))


def test_reads_csv_export(tmp_path: Path):
    _check_export(read_ratings(_write_csv(tmp_path / "ratings.csv", RATINGS)))


def test_csv_and_jsonl_agree_without_suffix(tmp_path: Path):
    a = read_ratings(_write_jsonl(tmp_path / "ratings-a", RATINGS))
    b = read_ratings(_write_csv(tmp_path / "ratings-b", RATINGS))
    assert a.systems == b.systems and a.prompts == b.prompts
    assert np.array_equal(a.outcome, b.outcome) and np.array_equal(a.rater, b.rater)


def test_minimal_csv(tmp_path: Path):
    rows = [
        {"prompt_id": "1", "system_a": "x", "system_b": "y", "outcome": "a", "rater": "w"},
        {"prompt_id": "2", "system_a": "y", "system_b": "x", "outcome": "TIE", "rater": ""},
    ]
    j = read_ratings(_write_csv(tmp_path / "min.csv", rows, ["prompt_id", "system_a", "system_b", "outcome", "rater"]))
    assert j.outcome.tolist() == [1, 0]
    assert j.rater.tolist() == [0, -1]
    assert j.left_is_a.tolist() == [-1, -1]
    assert not j.excluded.any() and not j.auto_tie.any()


def test_several_datasets_qualify_prompt_ids():
    j = from_records(
        [
            {"dataset": "ncm", "prompt_id": "1", "system_a": "x", "system_b": "y", "outcome": "A"},
            {"dataset": "dbdc", "prompt_id": "1", "system_a": "x", "system_b": "y", "outcome": "B"},
        ]
    )
    assert j.prompts == ("ncm/1", "dbdc/1")
    ncm = j.for_dataset("ncm")
    assert len(ncm) == 1 and ncm.prompts == ("ncm/1",) and ncm.datasets == ("ncm",)


def test_subset_and_compact():
    j = from_records(
        [
            {"prompt_id": "1", "system_a": "x", "system_b": "y", "outcome": "A", "rater": "r"},
            {"prompt_id": "2", "system_a": "y", "system_b": "z", "outcome": "B", "rater": "s"},
        ]
    )
    part = j.subset(np.array([False, True])).compact()
    assert part.systems == ("y", "z") and part.prompts == ("2",) and part.raters == ("s",)
    assert part.system_a.tolist() == [0] and part.system_b.tolist() == [1] and part.rater.tolist() == [0]
    assert j.judgements_per_system().tolist() == [1, 2, 1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"outcome": "C"}, "unknown outcome 'C'"),
        ({"outcome": None}, "unknown outcome None"),
        ({"system_b": "alpha"}, "system_a and system_b are both 'alpha'"),
        ({"auto_tie": "yes"}, "'auto_tie' must be true or false"),
        ({"auto_tie": True}, "auto_tie is true but outcome is 'A'"),
        ({"left": "middle"}, "unknown left 'middle'"),
        ({"prompt_id": None}, "'prompt_id' is empty"),
    ],
)
def test_bad_row_names_file_and_line(tmp_path: Path, change: dict, message: str):
    rows = [_rating(1), _rating(2, **change)]
    path = _write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InvalidInputError) as info:
        read_ratings(path)
    assert info.value.line == 3  # header, first rating, then the bad one
    assert info.value.path == str(path)
    assert message in info.value.message


def test_missing_field_jsonl(tmp_path: Path):
    row = _rating(1)
    del row["outcome"]
    with pytest.raises(InvalidInputError, match="missing field\\(s\\): outcome") as info:
        read_ratings(_write_jsonl(tmp_path / "bad.jsonl", [row], header=False))
    assert info.value.line == 1


def test_missing_column_csv(tmp_path: Path):
    path = _write_csv(tmp_path / "bad.csv", [{"prompt_id": "1"}], ["prompt_id", "system_a", "system_b"])
    with pytest.raises(InvalidInputError, match="missing column\\(s\\): outcome") as info:
        read_ratings(path)
    assert info.value.line == 1


def test_ragged_csv_row(tmp_path: Path):
    path = tmp_path / "ragged.csv"
    path.write_text("prompt_id,system_a,system_b,outcome\n1,x,y,A\n2,x,y\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="row has 3 cells") as info:
        read_ratings(path)
    assert info.value.line == 3


def test_bad_jsonl_lines_name_their_line(tmp_path: Path):
    path = _write_jsonl(tmp_path / "bad.jsonl", [_rating(1)])
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "{not json\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="not valid JSON") as info:
        read_ratings(path)
    assert info.value.line == 3
    path.write_text(text + "[1, 2]\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="each line must be a JSON object") as info:
        read_ratings(path)
    assert info.value.line == 3


def test_wrong_kind_header(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"schema_version": 1, "kind": "scores", "fields": []}) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="file kind is 'scores'"):
        read_ratings(path)


def test_only_quality_checks_is_an_error(tmp_path: Path):
    path = _write_jsonl(tmp_path / "r.jsonl", [_rating(1, item_kind="known_answer")])
    with pytest.raises(InvalidInputError, match="no pairwise judgements"):
        read_ratings(path)


def test_chateval_votes(tmp_path: Path):
    votes = tmp_path / "votes.csv"
    votes.write_text(
        "run,evalset,model_1,model_2,prompt,worker,hit,vote,assign_secs\n"
        "r1,NCM,m1,m2,3,W1,h,0,10\n"
        "r1,NCM,m1,m2,3,W2,h,1,10\n"
        "r1,NCM,m1,m2,4,W1,h,-1,10\n",
        encoding="utf-8",
    )
    runs = tmp_path / "runs.csv"
    runs.write_text("evalset,model_1,model_2,run\nNCM,m1,m2,r1\n", encoding="utf-8")
    j = read_chateval_votes(votes, runs)
    assert j.outcome.tolist() == [1, -1, 0]
    assert j.prompts == ("NCM/3", "NCM/4")
    assert j.raters == ("W1", "W2") and j.experiments == ("r1",)
    runs.write_text("evalset,model_1,model_2,run\nNCM,m2,m1,r1\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="run 'r1' compares 'm2' and 'm1'") as info:
        read_chateval_votes(votes, runs)
    assert info.value.line == 2


def test_chateval_votes_bad_vote(tmp_path: Path):
    votes = tmp_path / "votes.csv"
    votes.write_text("run,evalset,model_1,model_2,prompt,worker,hit,vote\nr1,NCM,a,b,1,W,h,2\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="unknown vote '2'") as info:
        read_chateval_votes(votes)
    assert info.value.line == 2


def test_real_votes(shared_data: Path):
    j = read_chateval_votes(shared_data / "votes.csv", shared_data / "runs.csv")
    assert len(j) == 10_704
    assert len(j.experiments) == 20
    ncm = j.for_dataset("NCM")
    assert len(ncm.systems) == 10
    # Independent count straight from the CSV: ties are vote == -1.
    with (shared_data / "votes.csv").open(newline="") as handle:
        ties = sum(row["vote"] == "-1" for row in csv.DictReader(handle))
    assert int((j.outcome == 0).sum()) == ties
