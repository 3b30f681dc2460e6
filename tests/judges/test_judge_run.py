"""A judge's run over pairs, through a complete_many-shaped callable: both orders, the combination, the rows in the
ratings download's shape, and the file read back by the hub's ratings reader and by the report card's reader."""

from __future__ import annotations

import json

import pytest

from evaluation.errors import InvalidInputError
from evaluation.judgements import RATINGS_EXPORT_FIELDS
from evaluation.judges.files import read_judge_file, write_judge_file
from evaluation.judges.pairs import SystemRef, dataset_pairs
from evaluation.judges.run import FIELDS, JudgeIdentity, judge_pairs
from evaluation.judges.templates import PAIRWISE_V1
from evaluation.llm.errors import EndpointAuthError, EndpointTimeout, EndpointUnreachable
from evaluation.ratings_files import read_ratings

from .helpers import answering

JUDGE = JudgeIdentity("rule-judge", "pairwise-v1", "127.0.0.1")
GOOD, BAD = SystemRef("good", 11), SystemRef("bad", 12)


@pytest.fixture
def pairs(hub_open):
    n = len(hub_open)
    good = [f"a fine and helpful answer number {i}" for i in range(n)]
    bad = [f"meh {i}" for i in range(n)]
    bad[:5] = good[:5]  # identical responses: automatic ties, never asked
    return dataset_pairs(hub_open, {GOOD: good, BAD: bad})


def quality_judge(first: str, second: str) -> str:
    """Prefers the helpful answer whatever its position."""
    if ("helpful" in first) == ("helpful" in second):
        return "same to me [[tie]]"
    return "First is better. [[A]]" if "helpful" in first else "Second is better.\n[[B]]"


def test_consistent_judge_rows_in_the_download_shape(pairs, tmp_path):
    calls = []

    def complete(conversations):
        calls.append(len(conversations))
        return answering(quality_judge)(conversations)

    rows, summary = judge_pairs(pairs, complete, judge=JUDGE, template=PAIRWISE_V1)
    assert calls == [2 * (len(pairs) - 5)]  # both orders of every pair but the identical ones, in one batch
    assert (summary.pairs, summary.auto_ties, summary.graded, summary.inconsistent, summary.ungraded) == (
        120,
        5,
        115,
        0,
        0,
    )
    assert all(tuple(row) == FIELDS for row in rows)
    assert FIELDS[: len(RATINGS_EXPORT_FIELDS)] == RATINGS_EXPORT_FIELDS
    auto = [row for row in rows if row["auto_tie"]]
    assert [row["prompt_id"] for row in auto] == ["hov1-001", "hov1-002", "hov1-003", "hov1-004", "hov1-005"]
    assert all(row["outcome"] == "tie" and row["judge_order_ab"] is None for row in auto)
    asked = [row for row in rows if not row["auto_tie"]]
    assert {(r["outcome"], r["judge_order_ab"], r["judge_order_ba"], r["judge_consistent"]) for r in asked} == {
        ("A", "A", "A", True)
    }
    first = asked[0]
    assert (first["system_a"], first["system_a_id"], first["system_b"], first["system_b_id"]) == ("good", 11, "bad", 12)
    assert (first["rater"], first["backend"], first["left"], first["item_kind"]) == (
        "judge:rule-judge|pairwise-v1|127.0.0.1",
        "judge",
        None,
        "pair",
    )
    assert (first["response_a_tokens"], first["response_b_tokens"]) == (7, 2)
    assert first["judge_answer_ab"] == "First is better. [[A]]" and first["judge_answer_ba"].endswith("[[B]]")

    path = tmp_path / "judge.jsonl"
    write_judge_file(path, rows)
    header = json.loads(path.read_text().splitlines()[0])
    assert header == {"schema_version": 1, "kind": "ratings", "fields": list(FIELDS)}
    judgements = read_ratings(path)  # what `chateval irt fit` and the PPI command read
    assert len(judgements) == 120 and judgements.keyed_by_id and judgements.systems == ("11", "12")
    assert judgements.raters == ("judge:rule-judge|pairwise-v1|127.0.0.1",)
    assert judgements.auto_tie.sum() == 5 and (judgements.outcome[~judgements.auto_tie] == 1).all()
    back = read_judge_file(path)
    assert back.rater == JUDGE.rater and back.keyed_by_id and len(back.records) == 120


def test_position_follower_is_inconsistent_and_counted_as_ties(pairs):
    rows, summary = judge_pairs(pairs, answering(lambda first, second: "[[A]]"), judge=JUDGE, template=PAIRWISE_V1)
    asked = [row for row in rows if not row["auto_tie"]]
    assert summary.inconsistent == 115 and summary.graded == 115
    assert {(r["outcome"], r["judge_order_ab"], r["judge_order_ba"], r["judge_consistent"]) for r in asked} == {
        ("tie", "A", "B", False)
    }


def test_unparseable_and_failed_orders_leave_the_pair_ungraded(pairs, tmp_path):
    def flaky(first: str, second: str):
        number = int(first.split()[-1])
        if number % 10 == 6 and "helpful" in first:
            return "I would rather not say."  # unparseable in order ab only
        if number % 10 == 7 and "helpful" in second:
            return EndpointTimeout("no answer within 60 s")
        return quality_judge(first, second)

    rows, summary = judge_pairs(pairs, answering(flaky), judge=JUDGE, template=PAIRWISE_V1)
    ungraded = [row for row in rows if row["item_kind"] == "ungraded"]
    assert summary.ungraded == len(ungraded) == 24 and summary.unparseable_answers == 12
    assert summary.failed_calls == 12
    for row in ungraded:
        assert row["outcome"] is None and row["judge_consistent"] is None
        states = {row["judge_order_ab"], row["judge_order_ba"]}
        assert states in ({"unparseable", "A"}, {"error", "A"})
    failed = next(row for row in ungraded if "error" in (row["judge_order_ab"], row["judge_order_ba"]))
    assert failed["judge_answer_ba"] == "EndpointTimeout: no answer within 60 s"
    path = tmp_path / "judge.jsonl"
    write_judge_file(path, rows)
    assert len(read_ratings(path)) == 120 - 24  # ungraded rows are not judgements: never guessed into a verdict
    assert sum(r.outcome is None for r in read_judge_file(path).records) == 24


def test_refused_key_stops_the_run_and_nothing_answered_is_an_error(pairs):
    with pytest.raises(EndpointAuthError):
        judge_pairs(
            pairs, answering(lambda a, b: EndpointAuthError("401: key refused")), judge=JUDGE, template=PAIRWISE_V1
        )
    with pytest.raises(EndpointUnreachable, match="nothing listens"):
        judge_pairs(
            pairs, answering(lambda a, b: EndpointUnreachable("nothing listens")), judge=JUDGE, template=PAIRWISE_V1
        )


def test_judge_identity_names_model_template_and_host_never_the_key():
    judge = JudgeIdentity.for_endpoint("https://user:sk-secret-123@api.example.com:8443/v1", "gpt-x", "pairwise-v1")
    assert judge.rater == "judge:gpt-x|pairwise-v1|api.example.com"
    with pytest.raises(InvalidInputError, match="model"):
        JudgeIdentity.for_endpoint("https://api.example.com/v1", "a|b", "pairwise-v1")
    with pytest.raises(InvalidInputError, match="endpoint"):
        JudgeIdentity.for_endpoint("not a url", "m", "pairwise-v1")
