"""Conversations of a study: starting one with a system, the whole tree as the chat page and the API read it, the
active branch, and the participant's annotations of each turn (checked against the study's current schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session, col, func, select

from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import (
    AnnotationSuggestion,
    Chat,
    ChatAnnotation,
    ChatBranch,
    ChatMessage,
    ChatRevert,
    Study,
    StudySystem,
)
from hub.models.common import utcnow
from hub.services.studies import arms, assistance, reviews, studies
from hub.services.studies import schema as schemas
from hub.services.studies.participants import Viewer, participant_for, readable_chat
from hub.services.studies.studies import system_json

MAX_HANDLING_MS = 24 * 3600 * 1000
ASSISTED_ARMS = ("assisted",)


class AnswerForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question_id: str = Field(min_length=1, max_length=schemas.MAX_ID_CHARS)
    value: Any = None
    explanation: str | None = Field(default=None, max_length=schemas.MAX_ANSWER_CHARS)
    handling_ms: int | None = Field(default=None, ge=0, le=MAX_HANDLING_MS)
    suggestion_id: int | None = Field(default=None, ge=1, le=2**63 - 1)
    draft_id: int | None = Field(default=None, ge=1, le=2**63 - 1, description="A real-time draft the answer used.")


class AnnotationsForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answers: list[AnswerForm] = Field(min_length=1, max_length=schemas.MAX_QUESTIONS)


def start_chat(session: Session, viewer: Viewer, study_id: int, system_id: int | None = None) -> Chat:
    """A new conversation of this participant (or admin) with `system_id`, or with the study's system this
    participant has talked to least (the lowest id among equals)."""
    study = session.get(Study, study_id)
    participant = participant_for(session, viewer, study_id)
    if study is None or (participant is None and not viewer.is_admin):
        raise NotFound(f"no study #{study_id}", field="study_id")
    if study.status != "open" and not viewer.is_admin:
        raise Conflict("this study is not open for conversations", field="study_id")
    systems = studies.systems_of(session, study_id)
    if system_id is not None:
        chosen = next((s for s in systems if s.id == system_id), None)
        if chosen is None:
            raise NotFound(f"study #{study_id} has no system #{system_id}", field="system_id")
    else:
        mine = Chat.participant_id == participant.id if participant else Chat.created_by_id == viewer.user.id  # type: ignore[union-attr]
        counts = dict(
            session.exec(
                select(Chat.system_id, func.count()).where(Chat.study_id == study_id, mine).group_by(Chat.system_id)
            ).all()
        )
        chosen = min(systems, key=lambda s: (counts.get(s.id, 0), s.id))
    chat = Chat(
        study_id=study_id,
        system_id=chosen.id or 0,
        participant_id=participant.id if participant else None,
        created_by_id=None if participant else viewer.user.id,  # type: ignore[union-attr]
    )
    session.add(chat)
    session.flush()
    chat.arm = arms.chat_arm(session, study, chat, participant)
    session.commit()
    session.refresh(chat)
    return chat


def chat_for(session: Session, viewer: Viewer, chat_id: int, *, writing: bool = False) -> Chat:
    """The conversation this viewer may read (404 alike otherwise); `writing`: it must still be active, and its
    study open (admins may also write in a study not open)."""
    chat = readable_chat(session, viewer, chat_id)
    if writing and chat.status != "active":
        raise Conflict("this conversation is finished", field="conversation_id")
    if writing and not viewer.is_admin:
        study = session.get(Study, chat.study_id)
        if study is None or study.status != "open":
            raise Conflict("this study is closed: its conversations can be read, not continued", field="study_id")
    return chat


def finish_chat(session: Session, viewer: Viewer, chat_id: int) -> Chat:
    """The participant is done with this conversation: it can be read, no longer continued."""
    chat = chat_for(session, viewer, chat_id, writing=True)
    chat.status, chat.updated_at = "finished", utcnow()
    session.add(chat)
    session.commit()
    session.refresh(chat)
    return chat


def message_of(session: Session, chat: Chat, message_id: int, *, field: str = "message_id") -> ChatMessage:
    """A message of this conversation; 404 alike for an unknown one and one of another conversation."""
    message = session.get(ChatMessage, message_id)
    if message is None or message.chat_id != chat.id:
        raise NotFound(f"conversation #{chat.id} has no message #{message_id}", field=field)
    return message


def messages_of(session: Session, chat: Chat) -> list[ChatMessage]:
    return list(session.exec(select(ChatMessage).where(ChatMessage.chat_id == chat.id).order_by(col(ChatMessage.id))))


def active_path(session: Session, chat: Chat) -> list[ChatMessage]:
    """The messages from the first to the active leaf."""
    by_id = {m.id: m for m in messages_of(session, chat)}
    path: list[ChatMessage] = []
    current = by_id.get(chat.current_leaf_id)
    while current is not None:
        path.append(current)
        current = by_id.get(current.parent_id)
    return path[::-1]


def open_branch(session: Session, chat: Chat) -> ChatBranch | None:
    query = select(ChatBranch).where(ChatBranch.chat_id == chat.id, col(ChatBranch.closed_by).is_(None))
    return session.exec(query.order_by(col(ChatBranch.id).desc())).first()


def move_leaf(session: Session, chat: Chat, leaf: ChatMessage) -> None:
    """The active branch now ends at `leaf` (its open ChatBranch follows; the first message opens one)."""
    branch = open_branch(session, chat)
    if branch is None:
        branch = ChatBranch(chat_id=chat.id or 0, leaf_id=leaf.id or 0)
    branch.leaf_id = leaf.id or 0
    chat.current_leaf_id, chat.updated_at = leaf.id, utcnow()
    session.add(branch)
    session.add(chat)


def message_json(message: ChatMessage) -> dict[str, Any]:
    return {
        "id": message.id,
        "parent_id": message.parent_id,
        "depth": message.depth,
        "role": message.role,
        "content": message.content,
        "images": [{"key": i.get("key"), "mime": i.get("mime")} for i in message.images],
        "status": message.status,
        "error": message.error,
        "edit_of_id": message.edit_of_id,
        "edit_reason": message.edit_reason,
        "edit_spans": message.edit_spans,
        "latency_ms": message.latency_ms,
        "prompt_tokens": message.prompt_tokens,
        "completion_tokens": message.completion_tokens,
        "created_at": message.created_at.isoformat(),
    }


def chat_json(session: Session, chat: Chat, *, admin: bool) -> dict[str, Any]:
    system = session.get(StudySystem, chat.system_id)
    return {
        "id": chat.id,
        "study_id": chat.study_id,
        "system": system_json(system, admin=admin) if system else None,
        "participant_id": chat.participant_id,
        "arm": chat.arm,
        "status": chat.status,
        "current_leaf_id": chat.current_leaf_id,
        "created_at": chat.created_at.isoformat(),
        "updated_at": chat.updated_at.isoformat(),
    }


def annotation_json(annotation: ChatAnnotation) -> dict[str, Any]:
    return {
        "id": annotation.id,
        "message_id": annotation.message_id,
        "participant_id": annotation.participant_id,
        "question_id": annotation.question_id,
        "schema_version": annotation.schema_version,
        "value": annotation.value,
        "explanation": annotation.explanation,
        "handling_ms": annotation.handling_ms,
        "suggestion_id": annotation.suggestion_id,
        "updated_at": annotation.updated_at.isoformat(),
    }


def tree_json(session: Session, viewer: Viewer, chat: Chat) -> dict[str, Any]:
    """The whole conversation: every message (parent ids form the tree), branches, reversals, the viewer's own
    annotations (an admin's: everyone's), the judge's suggestions where the arm is assisted, the active leaf."""
    messages = messages_of(session, chat)
    ids = [m.id for m in messages]
    annotations = select(ChatAnnotation).where(col(ChatAnnotation.message_id).in_(ids))
    if not viewer.is_admin:
        annotations = annotations.where(ChatAnnotation.participant_id == viewer.participant_in(chat.study_id))
    study = session.get(Study, chat.study_id)
    assert study is not None
    reviewing = reviews.is_reviewer(viewer, chat)  # another participant's conversation, read to annotate it
    arm = reviews.annotator_arm(study, chat, participant_for(session, viewer, chat.study_id)) if reviewing else chat.arm
    suggestions: list[AnnotationSuggestion] = []
    if viewer.is_admin or arm in ASSISTED_ARMS:
        query = select(AnnotationSuggestion).where(col(AnnotationSuggestion.message_id).in_(ids))
        suggestions = list(session.exec(query.where(col(AnnotationSuggestion.error).is_(None))))
    branches = session.exec(select(ChatBranch).where(ChatBranch.chat_id == chat.id).order_by(col(ChatBranch.id)))
    reverts = session.exec(select(ChatRevert).where(ChatRevert.chat_id == chat.id).order_by(col(ChatRevert.id)))
    conversation = chat_json(session, chat, admin=viewer.is_admin)
    if reviewing:  # the reviewer's own arm, and not who wrote it
        conversation |= {"arm": arm, "participant_id": None, "reviewing": True}
    return {
        "conversation": conversation,
        "schema_version": study.schema_version,
        "current_leaf_id": chat.current_leaf_id,
        "active_path": [m.id for m in active_path(session, chat)],
        "messages": [message_json(m) for m in messages],
        "branches": [
            {
                "id": b.id,
                "leaf_id": b.leaf_id,
                "closed_by": b.closed_by,
                "reason": b.reason,
                "successful": b.successful,
                "created_at": b.created_at.isoformat(),
            }
            for b in branches
        ],
        "reverts": [
            {
                "id": r.id,
                "from_leaf_id": r.from_leaf_id,
                "to_message_id": r.to_message_id,
                "depth": r.depth,
                "reason": r.reason,
                "created_at": r.created_at.isoformat(),
            }
            for r in reverts
        ],
        "annotations": [annotation_json(a) for a in session.exec(annotations.order_by(col(ChatAnnotation.id)))],
        "suggestions": [
            {
                "id": s.id,
                "message_id": s.message_id,
                "question_id": s.question_id,
                "value": s.value,
                "confidence": s.confidence,
                "explanation": s.explanation,
            }
            for s in suggestions
        ],
    }


def annotate(
    session: Session, viewer: Viewer, chat_id: int, message_id: int, form: AnnotationsForm
) -> list[ChatAnnotation]:
    """Store (or replace) the viewer's answers about one message (of their own conversation, or of one they
    review: reviews.py); all checked before any is written."""
    chat = reviews.viewable_chat(session, viewer, chat_id)
    message = message_of(session, chat, message_id)
    if message.status != "ok":
        raise Conflict("only a finished message can be annotated", field="message_id")
    participant = participant_for(session, viewer, chat.study_id)
    if participant is None and not viewer.is_admin:
        raise Forbidden("only the conversation's participant annotates it")
    study = session.get(Study, chat.study_id)
    assert study is not None
    version = studies.schema_version(session, study)
    questions = {q["id"]: q for q in version.definition["questions"]}
    checked: list[tuple[AnswerForm, Any, str | None]] = []
    seen: set[str] = set()
    for index, answer in enumerate(form.answers):
        field = f"answers[{index}]"
        question = questions.get(answer.question_id)
        if question is None:
            raise UnprocessableInput(f"the schema has no question {answer.question_id!r}", field=f"{field}.question_id")
        if answer.question_id in seen:
            raise UnprocessableInput("one answer per question", field=f"{field}.question_id")
        seen.add(answer.question_id)
        if not schemas.applies(question, message.role):
            who = "system" if message.role == "assistant" else "user"
            raise UnprocessableInput(f"question {answer.question_id!r} is not asked of {who} turns", field=field)
        value, explanation = schemas.check_answer(question, answer.value, answer.explanation, field=field)
        if answer.suggestion_id is not None:
            suggestion = session.get(AnnotationSuggestion, answer.suggestion_id)
            if suggestion is None or (suggestion.message_id, suggestion.question_id) != (message.id, question["id"]):
                raise UnprocessableInput("no such suggestion for this question", field=f"{field}.suggestion_id")
        checked.append((answer, value, explanation))
    participant_id = participant.id if participant else None
    for index, (answer, value, explanation) in enumerate(checked):
        if answer.draft_id is not None:  # MILO's real-time arm: how much of the judge's draft the answer kept
            final = value if questions[answer.question_id]["kind"] == "text" else (explanation or "")
            field = f"answers[{index}].draft_id"
            assistance.record_final_text(
                session, chat, message.id or 0, participant_id, answer.draft_id, final, field=field
            )
    stored = []
    for answer, value, explanation in checked:
        row = session.exec(
            select(ChatAnnotation).where(
                ChatAnnotation.message_id == message.id,
                ChatAnnotation.question_id == answer.question_id,
                ChatAnnotation.participant_id == participant_id
                if participant_id is not None
                else col(ChatAnnotation.participant_id).is_(None),
            )
        ).first() or ChatAnnotation(
            message_id=message.id or 0, participant_id=participant_id, question_id="", schema_version=0
        )
        row.question_id, row.schema_version, row.value = answer.question_id, version.version, value
        row.explanation, row.handling_ms, row.suggestion_id = explanation, answer.handling_ms, answer.suggestion_id
        row.updated_at = utcnow()
        session.add(row)
        stored.append(row)
    session.commit()
    for row in stored:
        session.refresh(row)
    return stored
