"""Text cells of the CSV files the hub publishes, made safe for spreadsheets (CSV formula injection, OWASP).

A spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (and, in some, a tab or a carriage return) as a
formula. So every *text* cell that starts with one of these, or with a single quote, is written with one extra
leading single quote: spreadsheets show the quote-prefixed cell as the text itself, and `restore` gives the exact
value back (drop one leading quote). Numbers are written as numbers and never quoted; JSONL is never changed.
"""

from __future__ import annotations

QUOTE = "'"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTED_STARTS = frozenset((*FORMULA_STARTS, QUOTE))  # each is one character: a cell's first character is looked up


def neutralise(text: str) -> str:
    """The cell as written to CSV: quote-prefixed when it starts like a formula (or with a quote), else as it is."""
    return QUOTE + text if text[:1] in QUOTED_STARTS else text


def restore(cell: str) -> str:
    """The value a CSV cell written by `neutralise` stands for."""
    return cell[1:] if cell.startswith(QUOTE) else cell
