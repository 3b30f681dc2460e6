"""A rule-based judge for the rubric tests: reads the criterion and the response out of the prompt it is sent."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

CRITERION = re.compile(r"^Quality criterion: (.+)$", re.M)
SUBJECTS = re.compile(r"Review subjects \(JSON; the field names are the ones used above\):\n(\{.*?\n\})", re.S)


def asked(request: Mapping) -> tuple[str, dict[str, str]]:
    """(criterion name, review subjects) of a chat request built by evaluation.rubrics.prompts."""
    prompt = request["messages"][-1]["content"]
    return CRITERION.search(prompt).group(1), json.loads(SUBJECTS.search(prompt).group(1))


def table_judge(grades: Mapping[str, Mapping[str, str]], default: str | None = None) -> Callable[[Mapping], str]:
    """Answers `grades[response][criterion name]`: JSON when it is a bare label, else the text as given."""

    def respond(request: Mapping) -> str:
        criterion, subjects = asked(request)
        answer = grades.get(subjects["response"], {}).get(criterion, default)
        if answer is None:
            raise AssertionError(f"no scripted answer for {subjects['response']!r} / {criterion!r}")
        if answer.startswith("raw:"):
            return answer[4:]
        return json.dumps({"grade": answer, "explanation": f"{criterion} of {subjects['response']!r}"})

    return respond
