"""What a system name may hold, and the key that makes public names unique.

A name is shown on every public page, so it may not carry characters that hide or reorder text: control characters
(newlines and tabs included), format characters (bidi embeddings, overrides and isolates, zero-width spaces and
joiners, soft hyphens), line and paragraph separators, private-use, surrogate and unassigned code points.

Two names clash when they look alike: their key is the UTS #39 confusable skeleton of the NFKC-normalised,
case-folded name with runs of white space collapsed (`echo` written with the Cyrillic letters U+0435 and U+0441,
`ECHO` and `echo` share a key). The skeleton is ICU's (`SpoofChecker.getSkeleton`, through PyICU, on ICU's copy of
Unicode's confusables data); it is taken twice with a case fold between, because some prototypes are capitals. The
key is stored as its sha256.

Pure functions: no database, so the model, the migration and the services share them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import cache

MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 10_000
MAX_URL_CHARS = 2048
FORBIDDEN_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character (bidi control, zero-width character)",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
NAME_CATEGORIES = frozenset(FORBIDDEN_CATEGORIES)
TEXT_CATEGORIES = frozenset({"Cc", "Cs"})
TEXT_CONTROLS_ALLOWED = "\t\n\r"  # in descriptions; never in names
# Bidi embeddings, overrides and isolates reorder the text around them; refused in every text field.
BIDI_CONTROLS = frozenset(chr(code) for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
_WHITE_SPACE = re.compile(r"\s+")


class RefusedText(ValueError):
    """A refused name or text field: the message says which character and where."""


@cache
def _spoof_checker():
    import icu  # PyICU

    return icu.SpoofChecker()


def skeleton(text: str) -> str:
    """UTS #39 skeleton (ICU): NFD, every character replaced by its confusable prototype, NFD again."""
    return str(_spoof_checker().getSkeleton(0, text))


def name_key(name: str) -> str:
    """The clash key of a name (sha256 hex of its folded skeleton); equal keys mean names that look alike."""
    folded = _WHITE_SPACE.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()
    once = skeleton(folded)
    twice = skeleton(unicodedata.normalize("NFKC", once).casefold())
    return hashlib.sha256(twice.encode("utf-8")).hexdigest()


def _first_forbidden(text: str, categories: frozenset[str], allowed: str = "") -> str | None:
    for position, char in enumerate(text, start=1):
        category = unicodedata.category(char)
        if (category in categories or char in BIDI_CONTROLS) and char not in allowed:
            name = unicodedata.name(char, "")
            label = f"U+{ord(char):04X}" + (f" {name}" if name else "")
            return f"character {position} is {FORBIDDEN_CATEGORIES[category]} ({label})"
    return None


def check_name(name: str) -> str:
    """The name with surrounding white space removed, or RefusedText saying what is wrong with it."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise RefusedText(f"system name must be 1 to {MAX_NAME_CHARS} characters")
    problem = _first_forbidden(name, NAME_CATEGORIES)
    if problem:
        raise RefusedText(f"system name may not contain hidden or control characters: {problem}")
    return name


def check_text(text: str, *, label: str, max_chars: int) -> str:
    """Free text (a description): bounded; tabs and line breaks allowed, other control characters and bidi
    overrides not (right-to-left marks and joiners are, for the languages that need them)."""
    if len(text) > max_chars:
        raise RefusedText(f"{label} must be at most {max_chars:,} characters")
    problem = _first_forbidden(text, TEXT_CATEGORIES, TEXT_CONTROLS_ALLOWED)
    if problem:
        raise RefusedText(f"{label} may not contain hidden or control characters: {problem}")
    return text
