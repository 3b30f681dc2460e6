"""A chat study's descriptive figures from plain rows: word-level edit distance (against a plain dynamic programme),
edit rate and size per system, where reversals go back to, and label distributions, on hand-worked examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.chat_study_stats import (
    MessageRow,
    RevertRow,
    edit_figures,
    label_distribution,
    reversal_summaries,
    reversals,
    word_edit_distance,
)


def _plain_levenshtein(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, word in enumerate(a, start=1):
        previous, row[0] = row[0], i
        for j, other in enumerate(b, start=1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != other))
    return row[-1]


@pytest.mark.parametrize(
    ("original", "edited", "distance"),
    [
        ("the cat sat", "the dog sat down", 2),  # cat -> dog, + down
        ("a b c d", "a c d", 1),
        ("", "one two", 2),
        ("same words", "  same   words ", 0),  # whitespace alone is no edit
        ("x y z", "z y x", 2),
    ],
)
def test_word_edit_distance_hand_worked(original, edited, distance):
    assert word_edit_distance(original, edited) == distance


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=12), st.lists(st.sampled_from("abcde"), max_size=12))
def test_word_edit_distance_equals_the_plain_dynamic_programme(a, b):
    assert word_edit_distance(" ".join(a), " ".join(b)) == _plain_levenshtein(a, b)


def _conversation() -> list[MessageRow]:
    """Chat 1 (system 7): u1 -> a2 (edited by a4, edited again by a5) ; u6 -> a7, a7 reverted to u1, then u9 -> a10.
    Chat 2 (system 8): u20 -> a21 (error) ; u22 -> a23."""
    return [
        MessageRow(1, 1, None, "user", "hello there"),
        MessageRow(2, 1, 1, "assistant", "the cat sat on the mat"),
        MessageRow(4, 1, 1, "assistant", "the dog sat on the mat", edit_of_id=2),
        MessageRow(5, 1, 1, "assistant", "the dog sat on a mat today", edit_of_id=4),
        MessageRow(6, 1, 5, "user", "why"),
        MessageRow(7, 1, 6, "assistant", "because"),
        MessageRow(9, 1, 1, "user", "other question"),
        MessageRow(10, 1, 9, "assistant", "other answer"),
        MessageRow(20, 2, None, "user", "hi"),
        MessageRow(21, 2, 20, "assistant", "", status="error"),
        MessageRow(22, 2, 20, "user", "hi again"),
        MessageRow(23, 2, 22, "assistant", "hello"),
    ]


def test_edit_rate_and_size_per_system():
    figures = {f.system_id: f for f in edit_figures(_conversation(), {1: 7, 2: 8})}
    seven = figures[7]
    # System 7 wrote a2, a7, a10 (3 replies); a2 was edited (twice: a4 then a5). Its size is a2 -> a5, the last edit:
    # cat -> dog, the -> a, + today = 3 words, over the 7 words of the edit.
    assert (seven.replies, seven.edited, seven.edits) == (3, 1, 2)
    assert seven.edit_rate == pytest.approx(1 / 3)
    assert (seven.mean_words_changed, seven.median_words_changed) == (3.0, 3.0)
    assert seven.mean_relative_size == pytest.approx(3 / 7)
    eight = figures[8]  # the error reply does not count as a reply
    assert (eight.replies, eight.edited, eight.edit_rate, eight.mean_words_changed) == (1, 0, 0.0, None)


def test_where_reversals_happen():
    messages = _conversation()
    # From leaf a7 (path u1 a5 u6 a7) back to u1: turn 1, a user turn, 3 messages abandoned.
    # From leaf a10 (path u1 u9 a10) to a7 on the other branch: common part u1, so 2 abandoned; a7 is turn 2.
    found = reversals(messages, [RevertRow(1, 7, 1), RevertRow(1, 10, 7), RevertRow(1, 10, 999)])
    assert [(r.turn, r.position, r.role, r.abandoned) for r in found] == [(1, 1, "user", 3), (2, 4, "assistant", 2)]
    [seven, eight] = reversal_summaries(found, {1: 7, 2: 8})
    assert (seven.count, seven.by_turn, seven.by_abandoned, seven.to_user_turns) == (2, {1: 1, 2: 1}, {2: 1, 3: 1}, 1)
    assert (seven.mean_turn, seven.mean_abandoned) == (1.5, 2.5)
    assert (eight.system_id, eight.count, eight.mean_turn) == (8, 0, None)


def test_label_distributions_per_kind():
    likert = label_distribution("q", "likert", ["bad", "ok", "good"], ["good", "ok", "good", None, "great"])
    assert [(c.label, c.count, c.share) for c in likert.counts] == [
        ("bad", 0, 0.0),
        ("ok", 1, 0.25),
        ("good", 2, 0.5),
        ("great", 1, 0.25),
    ]
    assert (likert.answers, likert.unknown) == (4, ("great",))
    multi = label_distribution("m", "multi", ["x", "y"], [["x"], ["x", "y"], []])
    assert [(c.label, c.count) for c in multi.counts] == [("x", 2), ("y", 1)] and multi.answers == 3
    text = label_distribution("t", "text", [], ["fine", " ", "ok"])
    assert (text.answers, text.non_empty, text.counts) == (3, 2, ())
    with pytest.raises(ValueError, match="kind"):
        label_distribution("z", "stars", [], [1])
