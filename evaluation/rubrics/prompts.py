"""The judge's prompt for one criterion of one item (MILO's templates, Tables A1 and A2), as chat messages."""

from __future__ import annotations

import json
from collections.abc import Mapping

from evaluation.rubrics.schema import HARSHNESS_INSTRUCTIONS, Criterion, Rubric

PROMPT_VERSION = "1"
"""Bump whenever the text below changes: it is part of every result's signature (and of the cache key)."""

SYSTEM_MESSAGE = (
    "You are a quality auditor within a quality control team. You grade one quality criterion at a time, "
    "exactly as its definition says, and answer with one JSON object."
)


def criterion_messages(rubric: Rubric, criterion: Criterion, item: Mapping[str, str]) -> list[dict[str, str]]:
    """System and user message asking for one grade of `criterion` for `item` (its rubric fields only)."""
    subjects = {name: item[name] for name in rubric.fields}
    parts = [_introduction(rubric, criterion), HARSHNESS_INSTRUCTIONS[criterion.harshness]]
    if rubric.description.strip():
        parts.append("Project description:\n" + rubric.description.strip())
    if rubric.instructions.strip():
        parts.append("Instructions:\n" + rubric.instructions.strip())
    parts.append(f"Quality criterion: {criterion.name}\nDefinition: {criterion.definition.strip()}")
    parts.append(_scale(rubric, criterion))
    parts.append(
        "Review subjects (JSON; the field names are the ones used above):\n"
        + json.dumps(subjects, ensure_ascii=False, indent=1)
    )
    parts.append(_answer_format(rubric, criterion))
    return [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": "\n\n".join(parts)}]


def _introduction(rubric: Rubric, criterion: Criterion) -> str:
    if rubric.mode == "point_deduction":
        return (
            "Your task is to evaluate the `response` based on the provided materials and identify any "
            f'errors of the category "{criterion.name}", as defined below.'
        )
    return (
        "Your task is to evaluate the `response` based on the provided materials and give your grade for the "
        f"{criterion.name} quality criterion, on the scale defined below."
    )


def _scale(rubric: Rubric, criterion: Criterion) -> str:
    lines = []
    for option in criterion.grades:
        if rubric.mode == "point_deduction":
            count = f"{option.value:g} occurrence{'' if option.value == 1 else 's'}"
            head = f'- "{option.label}" ({count})'
        else:
            head = f'- "{option.label}" ({option.value:g} of {criterion.max_value:g})'
        lines.append(f"{head}: {option.definition.strip()}" if option.definition.strip() else head)
    title = "Answer options" if rubric.mode == "point_deduction" else "Grades"
    return f"{title}:\n" + "\n".join(lines)


def _answer_format(rubric: Rubric, criterion: Criterion) -> str:
    labels = ", ".join(f'"{option.label}"' for option in criterion.grades)
    return (
        f"After your assessment, answer with exactly one of these options: {labels}. Give a brief explanation "
        "for your decision, referencing specific aspects of the definitions or the review subjects, in at most "
        f"{rubric.max_explanation_words} words. Answer with one JSON object and nothing else:\n"
        '{"grade": "<one of the options>", "explanation": "<your explanation>"}'
    )
