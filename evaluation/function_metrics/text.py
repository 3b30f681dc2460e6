"""Words, sentences and syllables of English text, as the shipped readability and repetition metrics count them.

Syllables are estimated, not looked up: the number of vowel groups (a, e, i, o, u, y; accented letters are not
vowels here), less one for a silent final "e" (a word ending in "e", but not in consonant + "le", with more than
one vowel group), and at least one per word. "cake" 1, "table" 2, "reading" 2, "beautiful" 3, "the" 1.
"""

from __future__ import annotations

import re
from functools import lru_cache

APOSTROPHES = "'\u2019"
WORD = re.compile(f"[^\\W\\d_]+(?:[{APOSTROPHES}][^\\W\\d_]+)*")
# ! ? and their full-width forms, the ellipsis, the ideographic full stop, the Arabic question mark; a "."
# not followed by a digit ("3.5" ends no sentence).
SENTENCE_END = re.compile("(?:[!?\u2026\u3002\uff01\uff1f\u061f]|\\.(?!\\d))+")
VOWEL_GROUP = re.compile(r"[aeiouy]+")
TOKEN = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Runs of letters (apostrophes inside a word kept: "don't"); numbers and punctuation are not words."""
    return WORD.findall(text)


def sentence_count(text: str) -> int:
    """Runs of sentence-ending punctuation after some words, plus one for final words with no end mark.
    Abbreviations ("Dr.") end a sentence here too."""
    count = 0
    last_end = 0
    for match in SENTENCE_END.finditer(text):
        if WORD.search(text, last_end, match.start()):
            count += 1
        last_end = match.end()
    if WORD.search(text, last_end):
        count += 1
    return count


def syllables(word: str) -> int:
    return _syllables(word.lower())


@lru_cache(maxsize=65_536)
def _syllables(word: str) -> int:
    if "'" in word or "\u2019" in word:
        word = word.replace("'", "").replace("\u2019", "")
    groups = len(VOWEL_GROUP.findall(word))
    if groups > 1 and word.endswith("e") and not re.search(r"[^aeiouy]le$", word):
        groups -= 1
    return max(1, groups)


def flesch_reading_ease(text: str) -> float | None:
    """206.835 - 1.015 (words / sentences) - 84.6 (syllables / words); None for a text without words."""
    found = words(text)
    if not found:
        return None
    sentences = max(1, sentence_count(text))
    total = sum(syllables(word) for word in found)
    return 206.835 - 1.015 * (len(found) / sentences) - 84.6 * (total / len(found))


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits and underscores) for n-gram counting."""
    return TOKEN.findall(text.lower())


def ngrams(items: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]
