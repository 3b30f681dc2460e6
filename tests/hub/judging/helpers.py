"""A rule-based judge behind the real local endpoint server, and what it must have answered, computed on its own.

Pairwise: the response with more whitespace words wins (ties when equal), so both orders agree. Rubric: every
criterion gets grade 1 + words // 4 (at most 5) with an explanation naming the word count, so a grading-scale
rubric's score is grade / 5."""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session, select

from hub.models import ItemKind, User
from hub.services.human import assignments, experiments, raters
from hub.storage import get_storage

SECRET = "sk-judge-SECRET-0123456789abcdef"
KEY_ENV = "HUB_TEST_JUDGE_KEY"
SUBJECTS = "Review subjects (JSON; the field names are the ones used above):\n"


def words(text: str) -> int:
    return len(text.split())


def grade_of(response: str) -> int:
    return min(5, 1 + words(response) // 4)


def explanation_of(response: str) -> str:
    return f"EXPLAINED: {words(response)} words"


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def judge_responder(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    if "[Response A]" in text:
        a = words(_between(text, "[Response A]\n", "\n[End of Response A]"))
        b = words(_between(text, "[Response B]\n", "\n[End of Response B]"))
        verdict = "[[A]]" if a > b else "[[B]]" if b > a else "[[tie]]"
        return f"Compared by length.\n{verdict}"
    subjects = json.loads(_between(text, SUBJECTS, "\n\nAfter your assessment"))
    response = subjects["response"]
    return json.dumps({"grade": str(grade_of(response)), "explanation": explanation_of(response)})


def expected_win_rate(mine: list[str], others: list[list[str]]) -> float:
    """The share of pairs the length judge gives to `mine` (ties, identical responses included, count half)."""
    values = []
    for other in others:
        for a, b in zip(mine, other, strict=True):
            if " ".join(a.split()) == " ".join(b.split()):
                values.append(0.5)
            else:
                values.append(1.0 if words(a) > words(b) else 0.0 if words(b) > words(a) else 0.5)
    return sum(values) / len(values)


def rate_experiment(session: Session, dataset: str, a_id: int, b_id: int, prompt_ids: list[str], seed: int) -> int:
    """A launched hub experiment of a vs b on `prompt_ids`, 3 raters answering every item (A on even prompt
    positions, B on odd ones; attention checks as expected), each rater then included by the admin."""
    admin = session.exec(select(User).where(User.is_admin)).first()
    form = experiments.ExperimentForm(
        dataset=dataset, system_a_id=a_id, system_b_id=b_id, prompt_ids=prompt_ids, raters_per_prompt=3, seed=seed
    )
    experiment = experiments.create_experiment(session, admin, form, get_storage())
    experiment = experiments.launch(session, admin, experiment.id)
    judged = 0
    for r in range(3):
        rater = raters.rater_for(session, "hub", f"judging-{seed}-rater-{r}")
        while (assignment := assignments.claim_task(session, experiment, rater)) is not None:
            choices = {}
            for item in assignments.task_items(session, assignment.task_id):
                outcome = item.expected or ("A" if (prompt_ids.index(item.prompt_id) + r) % 3 else "B")
                left = "A" if item.left_is_a else "B"
                choices[item.id] = "left" if outcome == left else "right"
                judged += item.kind == ItemKind.pair
            assignments.submit(session, assignment, choices)
        raters.set_excluded(session, admin, rater.id, excluded=False)
    return judged
