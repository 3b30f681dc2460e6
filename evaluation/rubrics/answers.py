"""Reading a judge's answer: a grade that is one of the criterion's options and an explanation, or why not.

Accepted forms, in this order: a JSON object with a `grade` key (fenced or inside other text), lines such as
`Grade: 3` / `**Rating:** Good`, or a first line that is exactly one option. Anything else, a grade that is
no option, or two different grades in one answer, is unparseable: never guessed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from evaluation.rubrics.schema import Criterion, GradeOption

RAW_CHARS = 500
"""How much of an unparseable answer is kept (to read what went wrong, not to store whole essays)."""
MAX_JSON_OBJECTS = 20

_GRADE_LINE = re.compile(r"^[\s*_#>`-]*(?:final\s+)?(?:grade|rating)[\s*_`]*[:=][\s*_`]*(.*?)[\s*_`]*$", re.I | re.M)
_EXPLANATION_LINE = re.compile(r"^[\s*_#>`-]*(?:explanation|reason|rationale)[\s*_`]*[:=][\s*_`]*", re.I | re.M)
_FRACTION = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:/|out of)\s*(\d+(?:\.\d+)?)$", re.I)
_QUALIFIED = re.compile(r"^(.+?)\s*(?:\((.+)\)|[-\u2013\u2014:]\s+(.+))$")


@dataclass(frozen=True)
class ParsedAnswer:
    """The option found (None when unparseable), the explanation given, and why nothing was found."""

    option: GradeOption | None
    explanation: str | None
    problem: str | None = None


def parse_answer(text: str, criterion: Criterion) -> ParsedAnswer:
    """Find the grade and explanation in a judge's answer to one criterion."""
    body = text.strip()
    if not body:
        return ParsedAnswer(None, None, "the answer is empty")
    objects = _json_objects(body)
    if objects:
        return _from_json(objects, criterion)
    grade_lines = list(_GRADE_LINE.finditer(body))
    if grade_lines:
        return _from_lines(body, grade_lines, criterion)
    first, _, rest = body.partition("\n")
    option = _match_exact(_clean(first), criterion)
    if option is not None:
        return ParsedAnswer(option, _explanation_text(rest))
    return ParsedAnswer(None, None, "no grade found (neither a JSON 'grade' nor a 'Grade:' line)")


def resolve_grade(value: object, criterion: Criterion) -> GradeOption | None:
    """The option a stated grade names: its label (any case), its value, `3/5` on a 5 scale, `3 (Good)`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _by_value(float(value), criterion)
    if not isinstance(value, str):
        return None
    cleaned = _clean(value)
    option = _match_exact(cleaned, criterion)
    if option is not None:
        return option
    fraction = _FRACTION.match(cleaned)
    if fraction and float(fraction.group(2)) == criterion.max_value:
        return _by_value(float(fraction.group(1)), criterion)
    qualified = _QUALIFIED.match(cleaned)
    if qualified:
        head = resolve_grade(qualified.group(1), criterion)
        tail = _match_exact(_clean(qualified.group(2) or qualified.group(3)), criterion)
        if head is not None and tail in (None, head):
            return head
    return None


def _from_json(objects: list[dict], criterion: Criterion) -> ParsedAnswer:
    chosen: GradeOption | None = None
    explanation = None
    for obj in objects:
        grade = obj[_grade_key(obj)]
        option = resolve_grade(grade, criterion)
        if option is None:
            return ParsedAnswer(None, None, f"grade {_short(grade)} is not one of the options {_labels(criterion)}")
        if chosen is not None and option != chosen:
            return ParsedAnswer(None, None, f"two different grades: {chosen.label!r} and {option.label!r}")
        if chosen is None:
            chosen = option
            for key, value in obj.items():
                if isinstance(key, str) and key.casefold() in ("explanation", "reason", "rationale"):
                    explanation = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return ParsedAnswer(chosen, _explanation_text(explanation))


def _from_lines(body: str, grade_lines: list[re.Match[str]], criterion: Criterion) -> ParsedAnswer:
    options = []
    for match in grade_lines:
        option = resolve_grade(match.group(1), criterion)
        if option is None:
            stated = _short(match.group(1))
            return ParsedAnswer(None, None, f"grade {stated} is not one of the options {_labels(criterion)}")
        options.append(option)
    if any(option != options[0] for option in options):
        return ParsedAnswer(None, None, f"two different grades: {options[0].label!r} and {options[-1].label!r}")
    explanation_match = _EXPLANATION_LINE.search(body)
    if explanation_match:
        explanation = _GRADE_LINE.sub("", body[explanation_match.end() :])
    else:
        explanation = _GRADE_LINE.sub("", body)
    return ParsedAnswer(options[0], _explanation_text(explanation))


def _json_objects(body: str) -> list[dict]:
    """JSON objects with a grade key, wherever they sit in the text (code fences, prose around them)."""
    decoder = json.JSONDecoder()
    found: list[dict] = []
    position = body.find("{")
    tries = 0
    while position >= 0 and tries < MAX_JSON_OBJECTS * 5 and len(found) < MAX_JSON_OBJECTS:
        tries += 1
        try:
            value, end = decoder.raw_decode(body, position)
        except ValueError:
            position = body.find("{", position + 1)
            continue
        if isinstance(value, dict) and _grade_key(value) is not None:
            found.append(value)
        position = body.find("{", end)
    return found


def _grade_key(obj: dict) -> str | None:
    return next((key for key in obj if isinstance(key, str) and key.casefold() in ("grade", "rating")), None)


def _by_value(value: float, criterion: Criterion) -> GradeOption | None:
    if not math.isfinite(value):
        return None
    return next((option for option in criterion.grades if option.value == value), None)


def _match_exact(text: str, criterion: Criterion) -> GradeOption | None:
    folded = text.casefold()
    for option in criterion.grades:
        if option.label.casefold() == folded:
            return option
    try:
        number = float(text)
    except ValueError:
        return None
    return _by_value(number, criterion)


def _clean(text: str) -> str:
    return text.strip().strip("*_`\"' \u201c\u201d\u2018\u2019").rstrip(".!").strip()


def _explanation_text(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip()
    return text or None


def _labels(criterion: Criterion) -> str:
    return "(" + ", ".join(repr(option.label) for option in criterion.grades) + ")"


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text[:60] + ("…" if len(text) > 60 else ""))


def truncate_words(text: str | None, max_words: int) -> tuple[str | None, bool]:
    """At most `max_words` words (and 20 characters a word), with an ellipsis when cut; (text, was it cut)."""
    if text is None:
        return None, False
    words = text.split()
    limit_chars = max_words * 20
    if len(words) <= max_words and len(text) <= limit_chars:
        return text, False
    cut = " ".join(words[:max_words])[:limit_chars].rstrip()
    return cut + " …", True


def truncate_raw(text: str) -> str:
    return text if len(text) <= RAW_CHARS else text[:RAW_CHARS] + " …"
