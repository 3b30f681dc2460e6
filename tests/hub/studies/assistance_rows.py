"""A randomised assistance study written straight through the models: `per_arm` participants in each of the arms
unassisted / assisted / realtime, each with one conversation of `turns` system replies they annotated ("safe",
binary; "helpful", Likert 1-5) with handling times, the judge's suggestion logged for every reply in every arm, and
real-time drafts with their kept share. Assisted participants answer faster and copy the suggestion more often, so
the report's effects have a known sign."""

from __future__ import annotations

import numpy as np
from sqlmodel import Session

from evaluation.assistance_outcomes import kept_fraction
from hub.models import (
    AnnotationSuggestion,
    Chat,
    ChatAnnotation,
    ChatMessage,
    DraftRequest,
    Judge,
    Rater,
    StudyParticipant,
    User,
)
from hub.services.human.raters import public_hash
from hub.services.studies import studies
from tests.hub.studies.helpers import study_body

ARMS = ("unassisted", "assisted", "realtime")
SPEED = {"unassisted": 1.0, "assisted": 0.6, "realtime": 1.3}


def seed_assistance_study(engine, admin: User, *, per_arm: int = 4, turns: int = 6, seed: int = 3) -> int:
    rng = np.random.default_rng(seed)
    with Session(engine) as session:
        judge = Judge(name=f"assistant judge {seed}", base_url="http://127.0.0.1:9/v1", model="judge-1")
        session.add(judge)
        session.flush()
        assistance = {"mode": "pre_annotation", "judge_id": judge.id, "arms": list(ARMS), "seed": 77}
        study = studies.create_study(session, admin, study_body("http://127.0.0.1:9/v1", assistance=assistance))
        system_id = studies.systems_of(session, study.id)[0].id
        for number in range(per_arm * len(ARMS)):
            arm = ARMS[number % len(ARMS)]
            external = f"assist-{seed}-{number}"
            rater = Rater(backend="study", external_id=external, public_hash=public_hash("study", external))
            session.add(rater)
            session.flush()
            participant = StudyParticipant(study_id=study.id, rater_id=rater.id, arm=arm)
            session.add(participant)
            session.flush()
            chat = Chat(study_id=study.id, system_id=system_id, participant_id=participant.id, arm=arm)
            session.add(chat)
            session.flush()
            parent = None
            pace = float(np.exp(rng.normal(0, 0.2)))
            for turn in range(turns):
                user = ChatMessage(chat_id=chat.id, parent_id=parent, depth=2 * turn, role="user", content=f"Q{turn}")
                session.add(user)
                session.flush()
                reply = ChatMessage(chat_id=chat.id, parent_id=user.id, depth=2 * turn + 1, role="assistant")
                reply.content = f"Answer {turn} to question {turn}."
                session.add(reply)
                session.flush()
                parent = reply.id
                suggested = {"safe": bool(turn % 2), "helpful": 4}
                ids = {}
                for question, value in suggested.items():
                    row = AnnotationSuggestion(
                        message_id=reply.id, question_id=question, judge_id=judge.id, value=value, confidence=0.7
                    )
                    session.add(row)
                    session.flush()
                    ids[question] = row.id
                for question, value in suggested.items():
                    copies = rng.random() < (0.95 if arm == "assisted" else 0.3)
                    own = bool(rng.random() < 0.5) if question == "safe" else int(rng.integers(1, 6))
                    handling = int(8000 * SPEED[arm] * pace * float(np.exp(rng.normal(0, 0.3))))
                    session.add(
                        ChatAnnotation(
                            message_id=reply.id,
                            participant_id=participant.id,
                            question_id=question,
                            schema_version=1,
                            value=value if copies else own,
                            handling_ms=handling,
                            suggestion_id=ids[question] if arm == "assisted" else None,
                        )
                    )
                if arm == "realtime" and turn < 2:
                    draft = "A helpful and safe answer to the question."
                    final = draft if turn == 0 else "My own answer, helpful to the question."
                    session.add(
                        DraftRequest(
                            chat_id=chat.id,
                            message_id=reply.id,
                            participant_id=participant.id,
                            purpose="free_text",
                            question_id="note",
                            judge_id=judge.id,
                            draft=draft,
                            final_text=final,
                            kept_fraction=kept_fraction(draft, final),
                            latency_ms=900,
                        )
                    )
        session.commit()
        return study.id or 0
