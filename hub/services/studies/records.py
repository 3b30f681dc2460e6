"""A study's data read once for its downloads, dashboard and reference dataset: conversations with their messages,
branches and reversals, annotations with the suggestions shown, participants as public hashes, every schema version;
and who may read it (admins always; anyone once the study is closed and published)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, col, select

from hub.errors import NotFound
from hub.models import (
    AnnotationSuggestion,
    Chat,
    ChatAnnotation,
    ChatBranch,
    ChatMessage,
    ChatRevert,
    Rater,
    Study,
    StudyParticipant,
    StudySchema,
    StudySystem,
    User,
)


def published(study: Study) -> bool:
    """A study's conversations and annotations are public once it is closed and an admin marked it public."""
    return study.status == "closed" and bool(getattr(study, "public", False))


def readable_study(session: Session, viewer: User | None, study_id: int) -> Study:
    """The study if `viewer` may read its data (an admin, or anyone when it is published); 404 alike otherwise, so a
    draft's existence never leaks."""
    study = session.get(Study, study_id)
    if study is not None and ((viewer is not None and viewer.is_admin) or published(study)):
        return study
    raise NotFound(f"no study #{study_id}", field="study_id")


def published_studies(session: Session) -> Iterator[Study]:
    for study in session.exec(select(Study).where(Study.status == "closed").order_by(col(Study.id))):
        if published(study):
            yield study


@dataclass
class StudyRecords:
    """Everything of one study, each list in id order. `public`: only participants' conversations (an admin's own
    test chats left out) and no endpoint error texts."""

    study: Study
    public: bool
    systems: dict[int, StudySystem]
    schemas: dict[int, dict[str, Any]]
    """Schema version -> its normalised definition."""
    chats: list[Chat]
    participants: dict[int, StudyParticipant]
    participant_hash: dict[int, str]
    """Participant id -> the rater's public (salted) hash; never the private external id."""
    messages: dict[int, list[ChatMessage]] = field(default_factory=dict)
    branches: dict[int, list[ChatBranch]] = field(default_factory=dict)
    reverts: dict[int, list[ChatRevert]] = field(default_factory=dict)
    annotations: list[ChatAnnotation] = field(default_factory=list)
    suggestions: dict[int, AnnotationSuggestion] = field(default_factory=dict)

    @property
    def study_id(self) -> int:
        assert self.study.id is not None
        return self.study.id

    @property
    def message_chat(self) -> dict[int, int]:
        return {m.id: m.chat_id for messages in self.messages.values() for m in messages if m.id is not None}

    def arm_of(self, chat: Chat) -> str | None:
        """The conversation's arm, or its participant's when the study randomises participants."""
        if chat.arm is not None or chat.participant_id is None:
            return chat.arm
        participant = self.participants.get(chat.participant_id)
        return participant.arm if participant else None

    def question(self, version: int, question_id: str) -> dict[str, Any] | None:
        for question in self.schemas.get(version, {}).get("questions", []):
            if question["id"] == question_id:
                return question
        return None

    def current_questions(self) -> list[dict[str, Any]]:
        return list(self.schemas.get(self.study.schema_version, {}).get("questions", []))


def _by_chat(rows) -> dict[int, list]:
    grouped: dict[int, list] = defaultdict(list)
    for row in rows:
        grouped[row.chat_id].append(row)
    return dict(grouped)


def load(session: Session, study: Study, *, public: bool) -> StudyRecords:
    """Read the study's rows (a few queries, each in id order)."""
    study_id = study.id
    systems = {s.id: s for s in session.exec(select(StudySystem).where(StudySystem.study_id == study_id)) if s.id}
    schemas = {
        row.version: row.definition for row in session.exec(select(StudySchema).where(StudySchema.study_id == study_id))
    }
    chat_filter = [Chat.study_id == study_id]
    if public:
        chat_filter.append(col(Chat.participant_id).is_not(None))
    chats = list(session.exec(select(Chat).where(*chat_filter).order_by(col(Chat.id))))
    # Subqueries rather than lists of ids: a large study stays within the database's limit on bound parameters.
    chat_ids = select(Chat.id).where(*chat_filter)
    message_ids = select(ChatMessage.id).where(col(ChatMessage.chat_id).in_(chat_ids))
    pairs = session.exec(
        select(StudyParticipant, Rater)
        .join(Rater, col(Rater.id) == col(StudyParticipant.rater_id))
        .where(StudyParticipant.study_id == study_id)
    )
    participants, hashes = {}, {}
    for participant, rater in pairs:
        participants[participant.id] = participant
        hashes[participant.id] = rater.public_hash
    messages = session.exec(
        select(ChatMessage).where(col(ChatMessage.chat_id).in_(chat_ids)).order_by(col(ChatMessage.id))
    )
    annotation_filter = [col(ChatAnnotation.message_id).in_(message_ids)]
    if public:
        annotation_filter.append(col(ChatAnnotation.participant_id).is_not(None))
    annotations = list(session.exec(select(ChatAnnotation).where(*annotation_filter).order_by(col(ChatAnnotation.id))))
    shown = select(ChatAnnotation.suggestion_id).where(*annotation_filter)
    suggestions = session.exec(select(AnnotationSuggestion).where(col(AnnotationSuggestion.id).in_(shown)))
    return StudyRecords(
        study=study,
        public=public,
        systems=systems,
        schemas=schemas,
        chats=chats,
        participants=participants,
        participant_hash=hashes,
        messages=_by_chat(messages),
        branches=_by_chat(
            session.exec(select(ChatBranch).where(col(ChatBranch.chat_id).in_(chat_ids)).order_by(col(ChatBranch.id)))
        ),
        reverts=_by_chat(
            session.exec(select(ChatRevert).where(col(ChatRevert.chat_id).in_(chat_ids)).order_by(col(ChatRevert.id)))
        ),
        annotations=annotations,
        suggestions={s.id: s for s in suggestions if s.id is not None},
    )


def answer_label(question: dict[str, Any] | None, value: Any) -> str | None:
    """The label(s) an answer stands for: binary true = the second label (the schema lists labels lowest first,
    default No, Yes), a Likert point n = the n-th label, options as they are (multi-select joined by "; "); None for
    free text or a value outside the question."""
    if question is None or value is None:
        return None
    kind, labels = question["kind"], question["labels"]
    if kind == "binary" and isinstance(value, bool) and len(labels) == 2:
        return labels[1] if value else labels[0]
    if kind == "likert" and isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(labels):
        return labels[value - 1]
    if kind == "choice" and isinstance(value, str):
        return value
    if kind == "multi" and isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return None
