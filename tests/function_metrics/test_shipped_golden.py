"""The shipped function metrics against values counted by hand (syllables, words, sentences, n-grams)."""

from __future__ import annotations

import pytest

from evaluation.function_metrics import function_metrics
from evaluation.function_metrics.conversations import Conversation, Message
from evaluation.function_metrics.runner import TurnItem, run_function
from evaluation.function_metrics.text import sentence_count, syllables, words


def flesch(n_words: int, n_sentences: int, n_syllables: int) -> float:
    """The published formula (Flesch 1948), from counts made by hand below."""
    return 206.835 - 1.015 * (n_words / n_sentences) - 84.6 * (n_syllables / n_words)


def turn_values(texts: list[str], *, role: str = "assistant", metric: str) -> dict[str, float]:
    """Values of `metric` on the last of `texts`, all turns of one role in one conversation."""
    conversation = Conversation("c", None, tuple(Message(role, t) for t in texts), line=1)
    return run_function(function_metrics()[metric], TurnItem(conversation, len(texts) - 1))


@pytest.mark.parametrize(
    ("word", "count"),
    [
        ("the", 1),
        ("cat", 1),
        ("cake", 1),  # silent final e
        ("table", 2),  # consonant + le keeps its syllable
        ("simple", 2),
        ("reading", 2),
        ("beautiful", 3),
        ("are", 1),
        ("rhythm", 1),  # y is a vowel: one group
        ("hmm", 1),  # no vowel: at least one
        ("Understanding", 4),
    ],
)
def test_syllable_heuristic_matches_hand_counts(word, count):
    assert syllables(word) == count


def test_flesch_reading_ease_of_hand_counted_texts():
    # "The cat sat on the mat." 6 words, 1 sentence, 6 syllables.
    assert turn_values(["The cat sat on the mat."], metric="readability") == {
        "readability": pytest.approx(flesch(6, 1, 6))
    }
    assert flesch(6, 1, 6) == pytest.approx(116.145)
    # Reading(2) is(1) beautiful(3). Tables(2) are(1) simple(2). 6 words, 2 sentences, 11 syllables.
    text = "Reading is beautiful. Tables are simple."
    assert turn_values([text], metric="readability")["readability"] == pytest.approx(flesch(6, 2, 11))
    assert flesch(6, 2, 11) == pytest.approx(48.69)
    # Numbers are not words and "3.5" ends no sentence; the last sentence has no end mark.
    # It(1) costs(1) dollars(2). Is(1) that(1) fine(1): 6 words, 2 sentences, 7 syllables.
    text = "It costs 3.5 dollars! Is that fine"
    assert words(text) == ["It", "costs", "dollars", "Is", "that", "fine"]
    assert sentence_count(text) == 2
    assert turn_values([text], metric="readability")["readability"] == pytest.approx(flesch(6, 2, 7))


def test_readability_is_absent_for_a_turn_without_words():
    assert turn_values(["42 ... ?"], metric="readability") == {}


def test_length_counts_words_and_characters():
    assert turn_values(["Hello,  world!"], metric="length") == {"length.words": 2, "length.chars": 14}
    assert turn_values(["naïve café"], metric="length") == {"length.words": 2, "length.chars": 10}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("How are you?", 1.0),
        ("Fine. And you? Good.", 1.0),
        ('She asked "why?"', 1.0),
        ("\u4f60\u597d\u5417\uff1f", 1.0),  # full-width question mark
        ("Tell me more.", 0.0),
        ("See https://example.org/?q=1 for details.", 0.0),  # a ? inside a URL is no question
        ("   ", None),
    ],
)
def test_is_question(text, expected):
    values = turn_values([text], metric="is-question")
    assert values == ({} if expected is None else {"is-question": expected})


def test_repetition_within_and_across_turns_of_the_same_role():
    # Trigrams: (the cat sat) (cat sat on) (sat on the) (on the cat) (the cat sat): 5, 4 distinct -> 1/5.
    text = "The cat sat on the cat sat"
    assert turn_values([text], metric="repetition") == {"repetition.within": pytest.approx(0.2)}
    # An earlier turn of the same role had (the cat sat) (cat sat down): 2 of the 5 trigrams occurred -> 0.4.
    values = turn_values(["the cat sat down", text], metric="repetition")
    assert values == {"repetition.within": pytest.approx(0.2), "repetition.across": pytest.approx(0.4)}
    # Fewer than three words: no trigram, no value.
    assert turn_values(["Yes sir"], metric="repetition") == {}


def test_repetition_across_ignores_the_other_speaker():
    conversation = Conversation(
        "c", None, (Message("user", "the cat sat down"), Message("assistant", "the cat sat down")), line=1
    )
    values = run_function(function_metrics()["repetition"], TurnItem(conversation, 1))
    assert values == {"repetition.within": 0.0}


def test_repetition_across_matches_a_direct_count_whatever_the_order_turns_are_scored_in():
    # The speaker history is extended turn by turn; asked out of order, or about another conversation in
    # between, it must give what a direct count over the earlier turns gives.
    texts = ["a b c d e", "x y z", "b c d q r", "p p p", "c d e a b c d", "u v w"]
    roles = ["assistant", "user"] * 3
    conversation = Conversation("h", None, tuple(Message(r, t) for r, t in zip(roles, texts, strict=True)), line=1)
    other = Conversation("h2", None, (Message("assistant", "a b c"), Message("assistant", "a b c d")), line=2)
    spec = function_metrics()["repetition"]

    def direct(index: int) -> float:
        grams = [tuple(texts[index].split()[i : i + 3]) for i in range(len(texts[index].split()) - 2)]
        earlier = [texts[j] for j in range(index) if roles[j] == roles[index]]
        seen = {tuple(t.split()[i : i + 3]) for t in earlier for i in range(len(t.split()) - 2)}
        return sum(g in seen for g in grams) / len(grams)

    for index in (2, 4, 0, 4, 2):
        values = run_function(spec, TurnItem(conversation, index))
        if index == 0:
            assert "repetition.across" not in values
        else:
            assert values["repetition.across"] == pytest.approx(direct(index))
        assert run_function(spec, TurnItem(other, 1))["repetition.across"] == pytest.approx(1 / 2)
    # By hand: (b c d) of 3 trigrams; (c d e) (a b c) (b c d) of 5.
    assert direct(2) == pytest.approx(1 / 3) and direct(4) == pytest.approx(3 / 5)
