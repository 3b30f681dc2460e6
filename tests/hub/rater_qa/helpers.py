"""A rule-based QA judge behind the real local endpoint server, raters who give reasons, and the verdicts the judge
must reach, computed on their own.

The judge (milo-qa, point deduction from 100, REDO below 80): a reason that says why ("because") in at least six
words has no error of any kind (score 100, PASSED); any other reason gets a central-claim error (40 points: score
60, REDO); a reason containing GARBLE gets an answer that is not JSON (recorded as unparseable, never graded)."""

from __future__ import annotations

import json
import random
from typing import Any

from sqlmodel import Session, select

from hub.models import User
from hub.services.human import assignments, raters

SECRET = "sk-qa-judge-SECRET-0123456789abcdef"
KEY_ENV = "HUB_TEST_QA_JUDGE_KEY"
SUBJECTS = "Review subjects (JSON; the field names are the ones used above):\n"
GOOD = [
    "Reply 1 is better because it answers the question that was asked.",
    "I picked this one because it stays on topic and is polite.",
    "The other reply is rude, so this is better because it is kind.",
]
BAD = ["idk", "just felt like it", "better", "Reply 1 good"]
GARBLE = "GARBLE this one confuses the judge because reasons"


def good_reason(text: str) -> bool:
    return "because" in text.lower() and len(text.split()) >= 6


def expected_status(text: str) -> str | None:
    if "GARBLE" in text:
        return None
    return "PASSED" if good_reason(text) else "REDO"


def expected_score(text: str) -> float | None:
    status = expected_status(text)
    return None if status is None else 100.0 if status == "PASSED" else 60.0


def qa_responder(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    criterion = text.split("Quality criterion: ", 1)[1].split("\n", 1)[0]
    subjects = json.loads(text.split(SUBJECTS, 1)[1].split("\n\nAfter your assessment", 1)[0])
    reason = subjects["response"]
    if "GARBLE" in reason:
        return "I would rather not say."
    yes_no = criterion in ("Central claim error", "Instruction-following error")
    error = criterion == "Central claim error" and not good_reason(reason)
    grade = ("Yes" if error else "No") if yes_no else "0"
    return json.dumps({"grade": grade, "explanation": f"QA-EXPLAINED: {len(reason.split())} words"})


def rate_with_reasons(engine, experiment_id: int, n_raters: int, seed: int) -> dict[int, str]:
    """Raters answer every block of the experiment at random, each with a reason drawn from GOOD, BAD and one
    GARBLE, through `assignments.submit` (the rating page's path); returns item id -> reason text, per rater."""
    from hub.models import Experiment

    rng, written = random.Random(seed), {}
    with Session(engine) as session:
        experiment = session.get(Experiment, experiment_id)
        admin = session.exec(select(User).where(User.is_admin)).first()
        for r in range(n_raters):
            rater = raters.rater_for(session, "hub", f"qa-{seed}-{r}")
            while (assignment := assignments.claim_task(session, experiment, rater)) is not None:
                choices, reasons = {}, {}
                for item in assignments.task_items(session, assignment.task_id):
                    outcome = item.expected or rng.choice("AB")
                    choices[item.id] = "left" if outcome == ("A" if item.left_is_a else "B") else "right"
                    pool = GOOD if rng.random() < 0.5 else BAD
                    reasons[item.id] = GARBLE if not written else rng.choice(pool)
                    written[(assignment.id, item.id)] = reasons[item.id]
                assignments.submit(session, assignment, choices, reasons)
            raters.set_excluded(session, admin, rater.id, excluded=False)
    return written
