"""The function metrics shipped with the toolkit (loaded by the `chateval.metrics` entry point, like a plugin)."""

from __future__ import annotations

import re
from collections import OrderedDict

from evaluation.function_metrics.registry import function_metric
from evaluation.function_metrics.text import flesch_reading_ease, ngrams, tokens

REPETITION_N = 3
# ?, full-width ? (U+FF1F) and Arabic ? (U+061F), then maybe closing quotes or brackets, then a space or the end.
QUESTION_MARK = re.compile("[?\uff1f\u061f]+(?=[\"'\u201d\u2019)\\]]*(?:\\s|$))")


@function_metric(
    "length",
    version="1",
    keys=("words", "chars"),
    measures="Length of each turn: words (whitespace-separated runs, punctuation attached) and characters "
    "(Unicode code points, spaces included).",
    does_not_measure="Tokens as a model counts them (see avg-length for 13a tokens), information content, or "
    "whether the length suits the request.",
)
def length(text: str) -> dict[str, float]:
    return {"words": len(text.split()), "chars": len(text)}


@function_metric(
    "readability",
    version="1",
    higher_is_better=None,
    measures="Flesch reading ease of an English turn: 206.835 - 1.015 (words per sentence) - 84.6 (syllables "
    "per word); about 90-100 is very easy, 0-30 very hard. Syllables come from a vowel-group heuristic "
    "(evaluation/function_metrics/text.py) and sentences from end punctuation, so short turns are noisy.",
    does_not_measure="Whether the text is correct, relevant or clear; readability of languages other than "
    "English; vocabulary difficulty beyond syllable counts. None for a turn without words.",
    citation="Flesch, R. (1948). A new readability yardstick. Journal of Applied Psychology 32(3).",
)
def readability(text: str) -> float | None:
    return flesch_reading_ease(text)


@function_metric(
    "is-question",
    version="1",
    higher_is_better=None,
    measures="1 if the turn asks a question (a question mark, ASCII, full-width or Arabic, ending a sentence), "
    "else 0; its mean over a role is the question rate.",
    does_not_measure="Questions without a question mark, whether a question is rhetorical, sincere or "
    "answerable, or how many questions a turn asks. None for an empty turn.",
)
def is_question(text: str) -> float | None:
    if not text.strip():
        return None
    return 1.0 if QUESTION_MARK.search(text) else 0.0


@function_metric(
    "repetition",
    version="1",
    keys=("within", "across"),
    higher_is_better=False,
    measures=f"Repeated word {REPETITION_N}-grams (lower-cased): `within` is the share of a turn's "
    f"{REPETITION_N}-grams that repeat an earlier one of the same turn; `across` the share that already "
    "occurred in an earlier turn of the same role in the conversation (a speaker repeating itself).",
    does_not_measure=f"Paraphrased repetition, repetition of the other speaker (echoing), or repetition in "
    f"turns under {REPETITION_N} words (None). `across` is None on a role's first turn and on response files.",
)
def repetition(text: str, role: str, previous: list[dict[str, str]], conversation_id: str) -> dict[str, float]:
    grams = [hash(gram) for gram in ngrams(tokens(text), REPETITION_N)]
    if not grams:
        return {}
    values = {"within": 1.0 - len(set(grams)) / len(grams)}
    earlier = tuple(m["content"] for m in previous if m["role"] == role)
    if earlier:
        seen = _histories.seen((conversation_id, role), earlier)
        values["across"] = sum(gram in seen for gram in grams) / len(grams)
    return values


class SpeakerHistory:
    """Hashes of the n-grams of a speaker's earlier turns, per (conversation, role), extended turn by turn, so a
    long conversation costs linear rather than quadratic time; rebuilt whenever the earlier turns asked about
    do not extend the ones held. Holds the last few speakers only (a conversation's turns are scored in order).
    n-grams are compared by 64-bit hash, as they are within a turn: a collision is vanishingly rare."""

    def __init__(self, size: int = 8):
        self.size = size
        self.entries: OrderedDict[tuple[str, str], tuple[tuple[str, ...], set[int]]] = OrderedDict()

    def seen(self, key: tuple[str, str], earlier: tuple[str, ...]) -> set[int]:
        contents, grams = self.entries.pop(key, ((), set()))
        if contents != earlier[: len(contents)]:
            contents, grams = (), set()
        for content in earlier[len(contents) :]:
            grams.update(hash(gram) for gram in ngrams(tokens(content), REPETITION_N))
        self.entries[key] = (earlier, grams)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return grams


_histories = SpeakerHistory()


@function_metric(
    "turns",
    version="1",
    over="conversation",
    keys=("all", "user", "assistant"),
    measures="Number of messages in a conversation: all of them, and the user's and the assistant's.",
    does_not_measure="How long the turns are (see length) or whether the conversation reached its goal.",
)
def turns(messages: list[dict[str, str]]) -> dict[str, float]:
    return {
        "all": len(messages),
        "user": sum(m["role"] == "user" for m in messages),
        "assistant": sum(m["role"] == "assistant" for m in messages),
    }
