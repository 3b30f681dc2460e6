"""Post-edit spans, checked against differences worked out by hand."""

from __future__ import annotations

from evaluation.chat_edits import changed_spans, edit_size


def test_a_replaced_word_is_one_span_at_its_place():
    original = "The capital of France is Lyon."
    spans = changed_spans(original, "The capital of France is Paris.")
    assert spans == [{"op": "replace", "original": "Lyon.", "edited": "Paris.", "start": 25, "end": 30}]
    assert original[25:30] == "Lyon."


def test_deletions_insertions_and_replacements_in_one_edit():
    original = "Sure! I think the answer is 42, probably."
    edited = "The answer is definitely 42."
    # By hand: "Sure!"0-5 "I"6-7 "think"8-13 "the"14-17 "answer"18-24 "is"25-27 "42,"28-31 "probably."32-41;
    # "answer is" is kept, the words before it become "The", the words after it "definitely 42.".
    spans = changed_spans(original, edited)
    assert spans == [
        {"op": "replace", "original": "Sure! I think the", "edited": "The", "start": 0, "end": 17},
        {"op": "replace", "original": "42, probably.", "edited": "definitely 42.", "start": 28, "end": 41},
    ]
    assert edit_size(original, spans) == {"spans": 2, "words_removed": 6, "words_added": 3, "changed_share": 0.75}


def test_pure_insertions_and_deletions_have_an_empty_side():
    assert changed_spans("a b c", "a b x c") == [{"op": "insert", "original": "", "edited": "x", "start": 4, "end": 4}]
    assert changed_spans("a b c", "a b c d e") == [
        {"op": "insert", "original": "", "edited": "d e", "start": 5, "end": 5}
    ]
    assert changed_spans("a  b c", "a c") == [{"op": "delete", "original": "b", "edited": "", "start": 3, "end": 4}]
    assert changed_spans("", "new text") == [
        {"op": "insert", "original": "", "edited": "new text", "start": 0, "end": 0}
    ]


def test_whitespace_alone_is_no_change():
    assert changed_spans("one two\nthree", "one  two three ") == []
    assert edit_size("one two", []) == {"spans": 0, "words_removed": 0, "words_added": 0, "changed_share": 0.0}
