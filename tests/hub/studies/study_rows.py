"""A study's rows written straight through the models (no endpoint server): two systems, two participants and an
admin's own test chat, with a post-edit (edited twice), a reversal to an earlier turn, branches with outcomes,
annotations of every question kind (two participants answering the same turns) and one judge suggestion.

Conversation 1 (participant 1, system "Bot A"):
    u1 "What is the capital of France?"
    ├── a2 "Paris is the capital." (edited; branch closed by edit)
    ├── a3 "The capital of France is Paris." (edit of a2; edited again)
    └── a4 "The capital of France is Paris, on the Seine." (edit of a3: the accepted post-edit)
        ├── u5 "And of Italy?" -> a6 "Rome is." (branch abandoned by a reversal to a4, marked unsuccessful)
        └── u7 "Thanks!" -> a8 "You are welcome." (open branch)
Conversation 2 (participant 2, system "Bot B"): u9 "Hi" -> a10 "Hello there."
Conversation 3 (the admin's own test chat, system "Bot A"): u11 "ADMIN TEST QX9" -> a12 "ADMIN REPLY QX9".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from hub.models import (
    AnnotationSuggestion,
    Chat,
    ChatAnnotation,
    ChatBranch,
    ChatMessage,
    ChatRevert,
    Judge,
    Rater,
    StudyParticipant,
    User,
)
from hub.services.human.raters import public_hash
from hub.services.studies import studies
from tests.hub.studies.helpers import study_body

PRIVATE_EXTERNAL_IDS = ("study-invite-PRIVATEQX9-1", "study-invite-PRIVATEQX9-2")
FORMULA = '=HYPERLINK("http://evil.example","x")'
START = datetime(2026, 11, 24, 1, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Seeded:
    study_id: int
    system_a: int
    system_b: int
    participants: tuple[int, int]
    hashes: tuple[str, str]
    m: dict[str, int]  # "u1", "a2", ... -> message id
    chats: tuple[int, int, int]


def _at(minutes: int) -> datetime:
    return START + timedelta(minutes=minutes)


def seed_study(engine, admin: User, *, status: str = "closed", public: bool = True, tag: str = "") -> Seeded:
    """`tag` tells the raters and judge of a second study in one database apart."""
    body = study_body("http://127.0.0.1:9/v1", status="draft")
    body["systems"] = [dict(body["systems"][0], label="Bot A"), dict(body["systems"][0], label="Bot B")]
    with Session(engine) as session:
        study = studies.create_study(session, admin, body)
        system_a, system_b = (s.id for s in studies.systems_of(session, study.id))
        participants, hashes = [], []
        for n, external in enumerate(f"{private}{tag}" for private in PRIVATE_EXTERNAL_IDS):
            rater = Rater(backend="study", external_id=external, public_hash=public_hash("study", external))
            session.add(rater)
            session.flush()
            participant = StudyParticipant(study_id=study.id, rater_id=rater.id, arm=("assisted", "unassisted")[n])
            session.add(participant)
            session.flush()
            participants.append(participant.id)
            hashes.append(rater.public_hash)
        # A conversation carries its participant's arm (copied when it starts, as the chat service does).
        chat1 = Chat(
            study_id=study.id, system_id=system_a, participant_id=participants[0], arm="assisted", created_at=_at(0)
        )
        chat2 = Chat(
            study_id=study.id, system_id=system_b, participant_id=participants[1], arm="unassisted", created_at=_at(1)
        )
        chat3 = Chat(study_id=study.id, system_id=system_a, created_by_id=admin.id, created_at=_at(2))
        session.add_all([chat1, chat2, chat3])
        session.flush()
        m: dict[str, int] = {}

        def say(name, chat, parent, role, content, depth, **fields):
            message = ChatMessage(
                chat_id=chat.id,
                parent_id=m.get(parent),
                role=role,
                content=content,
                depth=depth,
                created_at=_at(int(name[1:]) + 10),
                **fields,
            )
            session.add(message)
            session.flush()
            m[name] = message.id

        say("u1", chat1, None, "user", "What is the capital of France?", 0)
        say("a2", chat1, "u1", "assistant", "Paris is the capital.", 1, latency_ms=120)
        say("a3", chat1, "u1", "assistant", "The capital of France is Paris.", 1, edit_of_id=m["a2"])
        say("a4", chat1, "u1", "assistant", "The capital of France is Paris, on the Seine.", 1, edit_of_id=m["a3"])
        say("u5", chat1, "a4", "user", "And of Italy?", 2)
        say("a6", chat1, "u5", "assistant", "Rome is.", 3)
        say("u7", chat1, "a4", "user", "Thanks!", 2, images=[{"key": "ab" * 32, "mime": "image/png", "size": 68}])
        say("a8", chat1, "u7", "assistant", "You are welcome.", 3)
        say("u9", chat2, None, "user", "Hi", 0)
        say("a10", chat2, "u9", "assistant", "Hello there.", 1, error=None)
        say("u11", chat3, None, "user", "ADMIN TEST QX9", 0)
        say("a12", chat3, "u11", "assistant", "ADMIN REPLY QX9", 1, status="error", error="endpoint said PRIVATEQX9")
        chat1.current_leaf_id, chat2.current_leaf_id, chat3.current_leaf_id = m["a8"], m["a10"], m["a12"]
        session.add_all(
            [
                ChatBranch(chat_id=chat1.id, leaf_id=m["a2"], closed_by="edit", reason="too short", successful=False),
                ChatBranch(chat_id=chat1.id, leaf_id=m["a3"], closed_by="edit", successful=False),
                ChatBranch(chat_id=chat1.id, leaf_id=m["a6"], closed_by="revert", reason="off track", successful=False),
                ChatBranch(chat_id=chat1.id, leaf_id=m["a8"]),
                ChatBranch(chat_id=chat2.id, leaf_id=m["a10"]),
                ChatRevert(chat_id=chat1.id, from_leaf_id=m["a6"], to_message_id=m["a4"], depth=1, reason="off track"),
            ]
        )
        judge = Judge(name=f"suggester{tag}", base_url="http://127.0.0.1:9/v1", model="judge-1")
        session.add(judge)
        session.flush()
        suggestion = AnnotationSuggestion(
            message_id=m["a8"], question_id="helpful", judge_id=judge.id, value=4, confidence=0.8, explanation="ok"
        )
        session.add(suggestion)
        session.flush()

        def answer(participant, message, question, value, **fields):
            session.add(
                ChatAnnotation(
                    message_id=m[message],
                    participant_id=participant,
                    question_id=question,
                    schema_version=1,
                    value=value,
                    created_at=_at(30),
                    updated_at=_at(30),
                    **fields,
                )
            )

        one, two = participants
        # Both participants rate a4, a8 and a10 (helpful, safe); one more item each of the other kinds.
        for message, helpful_one, helpful_two, safe_one, safe_two in [
            ("a4", 5, 4, True, True),
            ("a8", 4, 4, True, False),
            ("a10", 2, 1, False, False),
        ]:
            shown = {"suggestion_id": suggestion.id} if message == "a8" else {}
            answer(one, message, "helpful", helpful_one, handling_ms=3000, **shown)
            answer(two, message, "helpful", helpful_two, handling_ms=5000)
            answer(one, message, "safe", safe_one, handling_ms=1000)
            answer(two, message, "safe", safe_two, handling_ms=1500)
        answer(one, "a6", "problems", ["Wrong", "Off-topic"], explanation=FORMULA)
        answer(one, "a8", "note", FORMULA, handling_ms=9000)
        answer(one, "u1", "topic", "Facts")
        answer(None, "a12", "helpful", 1)  # the admin's own answer on the test chat
        study.status, study.public = status, public
        # Participants were randomised by participant into the assisted and unassisted arms (MILO's pre-annotation).
        study.assistance = {
            "mode": "pre_annotation",
            "judge_id": judge.id,
            "randomise": "participant",
            "arms": ["unassisted", "assisted"],
            "seed": 7,
        }
        session.add(study)
        session.commit()
        return Seeded(
            study_id=study.id,
            system_a=system_a,
            system_b=system_b,
            participants=(one, two),
            hashes=(hashes[0], hashes[1]),
            m=m,
            chats=(chat1.id, chat2.id, chat3.id),
        )
