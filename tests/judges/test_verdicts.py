"""Reading a judge's answer and combining both orders of a pair (golden cases written by hand)."""

from __future__ import annotations

import pytest

from evaluation.dataset import Turn
from evaluation.errors import NotFoundError
from evaluation.judges.templates import PAIRWISE_V1, get_template
from evaluation.judges.verdicts import MAX_ANSWER_CHARS, combine, parse_verdict, to_system


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Response A stays on topic.\n[[A]]", "A"),
        ("B answers the question.\n[[B]]", "B"),
        ("Both are bland.\n[[tie]]", "tie"),
        ("Both are bland.\n[[TIE]]", "tie"),
        ("**[[ b ]]**", "B"),
        ("I prefer A. [[A]] Final answer: [[A]]", "A"),  # repeated, same verdict
        ("Reasoning...\nVerdict: B", "B"),  # the fallback line
        ("Reasoning...\n**Final verdict:** tie", "tie"),
        ("Response A is better.", None),  # prose only: never guessed
        ("[[A]] or [[B]]? Hard to say.", None),  # two different verdicts
        ("Verdict: A\nthen some more text", None),  # the fallback must be the last line
        ("[[C]]", None),
        ("", None),
        ("[[A]]" + " " * MAX_ANSWER_CHARS, None),  # runaway answer
        ("[A]", None),
    ],
)
def test_parse_verdict(answer, verdict):
    assert parse_verdict(answer) == verdict


def test_position_verdicts_in_system_terms():
    assert [to_system(v, "ab") for v in ("A", "B", "tie")] == ["A", "B", "tie"]
    assert [to_system(v, "ba") for v in ("A", "B", "tie")] == ["B", "A", "tie"]


@pytest.mark.parametrize(
    ("ab", "ba", "outcome", "consistent"),
    [
        ("A", "A", "A", True),
        ("B", "B", "B", True),
        ("tie", "tie", "tie", True),
        ("A", "B", "tie", False),  # follows the position: inconsistent, counted as a tie
        ("A", "tie", "tie", False),
        ("tie", "B", "tie", False),
        (None, "A", None, None),  # an unreadable order leaves the pair ungraded
        ("B", None, None, None),
        (None, None, None, None),
    ],
)
def test_combine(ab, ba, outcome, consistent):
    combined = combine(ab, ba)
    assert (combined.outcome, combined.consistent) == (outcome, consistent)


def test_template_shows_both_responses_in_the_order_asked():
    context = (Turn(role="user", content="hi there"),)
    messages = PAIRWISE_V1.render(context, "first answer", "second answer")
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "USER: hi there" in user
    assert user.index("first answer") < user.index("second answer")
    assert user.index("[Response A]") < user.index("first answer") < user.index("[Response B]")
    assert get_template("pairwise-v1") is PAIRWISE_V1
    with pytest.raises(NotFoundError, match=r"unknown pairwise template 'v0'.*pairwise-v1"):
        get_template("v0")
