"""MILO's assistance in a study: the study's judge suggests each categorical annotation of every message (a value,
a confidence and an explanation), computed in EVERY arm so over-reliance can be measured, but shown only to the
assisted arm (chats.tree_json); and, for the real-time arm, drafts of a free-text answer or of a post-edit on
request, each logged with how much of it the participant kept. No database connection is held while the judge
answers."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from evaluation.assistance_outcomes import kept_fraction
from evaluation.llm.client import ChatClient
from evaluation.llm.config import EndpointConfig
from evaluation.llm.errors import EndpointError
from hub import queue
from hub.errors import Conflict, Forbidden, HubError, NotFound, QueueUnavailable, ServiceUnavailable, UnprocessableInput
from hub.models import AnnotationSuggestion, Chat, ChatMessage, DraftRequest, Judge, Study
from hub.services.judging.registry import endpoint_config
from hub.services.studies import reviews, studies
from hub.services.studies import schema as schemas
from hub.services.studies.assistance_prompts import (
    SUGGESTED_KINDS,
    MalformedAnswer,
    clean_draft,
    draft_messages,
    read_suggestions,
    suggestion_messages,
)
from hub.services.studies.participants import Viewer, participant_for

log = logging.getLogger(__name__)
SUGGESTION_ATTEMPTS = 2  # a malformed answer is asked once more, then recorded as no suggestion
DRAFT_RETRIES = 2  # a participant is waiting: fewer endpoint retries than a batch job
MAX_POST_EDIT_CHARS = 20_000  # as a chat message
ERROR_CHARS = 2_000


def study_judge(session: Session, study: Study | None) -> Judge | None:
    """The judge the study's assistance uses, or None when the study has none."""
    settings = (study.assistance if study is not None else None) or {}
    if settings.get("mode", "none") == "none" or not isinstance(settings.get("judge_id"), int):
        return None
    return session.get(Judge, settings["judge_id"])


def _path(session: Session, message: ChatMessage) -> list[dict[str, str]]:
    """The conversation from its first message to `message`, following parent ids."""
    chain: list[dict[str, str]] = []
    current: ChatMessage | None = message
    while current is not None and len(chain) < 1_000:
        chain.append({"role": current.role, "content": current.content})
        current = session.get(ChatMessage, current.parent_id) if current.parent_id else None
    return chain[::-1]


# -- suggestions ----------------------------------------------------------------------------------------------------
def queue_suggestions(engine: Engine, reply_id: int) -> list[int]:
    """After a system reply is stored: queue suggestions for it and for the user message it answers (when the study
    pre-annotates). Returns the message ids queued; a queue that is down leaves them without suggestions."""
    with Session(engine) as session:
        reply = session.get(ChatMessage, reply_id)
        chat = session.get(Chat, reply.chat_id) if reply is not None else None
        study = session.get(Study, chat.study_id) if chat is not None else None
        if reply is None or study_judge(session, study) is None:
            return []
        ids = [reply.id or 0] + ([reply.parent_id] if reply.parent_id and reply.edit_of_id is None else [])
    queued = []
    for message_id in ids:
        try:
            queue.enqueue(queue.SUGGEST_ANNOTATIONS, message_id)
            queued.append(message_id)
        except QueueUnavailable as exc:
            log.warning("suggestions for message %s not queued: %s", message_id, exc.message)
    return queued


@dataclass
class _SuggestionWork:
    message_id: int
    judge_id: int
    questions: list[dict[str, Any]]
    config: EndpointConfig | None
    request: list[dict[str, str]]
    error: str | None = None


def _suggestion_work(session: Session, message_id: int) -> _SuggestionWork | None:
    message = session.get(ChatMessage, message_id)
    chat = session.get(Chat, message.chat_id) if message is not None else None
    study = session.get(Study, chat.study_id) if chat is not None else None
    judge = study_judge(session, study)
    if message is None or study is None or judge is None or message.status != "ok":
        return None
    definition = studies.schema_version(session, study).definition
    done = set(
        session.exec(
            select(AnnotationSuggestion.question_id).where(
                AnnotationSuggestion.message_id == message_id, AnnotationSuggestion.judge_id == judge.id
            )
        )
    )
    questions = [
        q
        for q in definition["questions"]
        if q["kind"] in SUGGESTED_KINDS and schemas.applies(q, message.role) and q["id"] not in done
    ]
    if not questions:
        return None
    work = _SuggestionWork(
        message_id, judge.id or 0, questions, None, suggestion_messages(_path(session, message), questions)
    )
    try:
        work.config = endpoint_config(judge)
    except HubError as exc:
        work.error = exc.message
    return work


def _ask_for_suggestions(work: _SuggestionWork) -> dict[str, dict[str, Any]]:
    if work.config is None:
        return {q["id"]: {"error": work.error or "the judge is not configured"} for q in work.questions}
    client = ChatClient(work.config)
    failure = "the judge did not answer"
    for _ in range(SUGGESTION_ATTEMPTS):
        try:
            return read_suggestions(client.complete(work.request).text, work.questions)
        except MalformedAnswer as exc:
            failure = str(exc)
        except EndpointError as exc:
            failure = f"the judge failed: {exc.message}"
            break
    return {q["id"]: {"error": failure} for q in work.questions}


def suggest_for_message(engine: Engine, message_id: int) -> int:
    """The queued job: ask the judge about every categorical question of the message not suggested yet; store one
    AnnotationSuggestion per question (with `error` and no value when the judge failed or answered out of range).
    Returns how many suggestions with a value were stored."""
    with Session(engine) as session:
        work = _suggestion_work(session, message_id)
    if work is None:
        return 0
    answers = _ask_for_suggestions(work)
    stored = 0
    with Session(engine) as session:
        for question in work.questions:
            answer = answers[question["id"]]
            row = AnnotationSuggestion(message_id=message_id, question_id=question["id"], judge_id=work.judge_id)
            row.value, row.confidence = answer.get("value"), answer.get("confidence")
            row.explanation, row.error = answer.get("explanation", ""), (answer.get("error") or None)
            if row.error:
                row.error = row.error[:ERROR_CHARS]
            session.add(row)
            try:
                session.commit()
            except IntegrityError:  # another worker stored this one first
                session.rollback()
                continue
            stored += row.error is None
    return stored


# -- real-time drafts -----------------------------------------------------------------------------------------------
class DraftForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    purpose: Literal["free_text", "post_edit"]
    message_id: int = Field(ge=1, le=2**63 - 1, description="The message the answer is about, or the reply to edit.")
    question_id: str | None = Field(default=None, min_length=1, max_length=schemas.MAX_ID_CHARS)


@dataclass
class PendingDraft:
    chat_id: int
    message_id: int
    participant_id: int | None
    purpose: str
    question_id: str | None
    judge_id: int
    config: EndpointConfig
    request: list[dict[str, str]]
    limit: int


def _draft_question(session: Session, study: Study, message: ChatMessage, question_id: str | None) -> dict[str, Any]:
    if question_id is None:
        raise UnprocessableInput("a free-text draft answers a question: name the question", field="question_id")
    questions = {q["id"]: q for q in studies.schema_version(session, study).definition["questions"]}
    question = questions.get(question_id)
    if question is None or question["kind"] != "text" or not schemas.applies(question, message.role):
        raise UnprocessableInput("no free-text question of that id is asked of this message", field="question_id")
    return question


def begin_draft(session: Session, viewer: Viewer, chat_id: int, form: DraftForm) -> PendingDraft:
    """Check a draft request of the real-time arm and build the judge's request."""
    chat = reviews.viewable_chat(session, viewer, chat_id)  # their own conversation, or one they review
    study = session.get(Study, chat.study_id)
    participant = participant_for(session, viewer, chat.study_id)
    if study is None or reviews.annotator_arm(study, chat, participant) != "realtime":
        raise Forbidden("the drafting assistant is offered in the real-time arm only", field="conversation_id")
    if chat.participant_id is not None and participant is None:
        raise Forbidden("only the conversation's participant asks for drafts", field="conversation_id")
    reviewing = participant is not None and participant.id != chat.participant_id
    if reviewing and form.purpose == "post_edit":
        raise Forbidden("a reviewer answers questions; post-edits are the author's", field="purpose")
    message = session.get(ChatMessage, form.message_id)
    if message is None or message.chat_id != chat.id:
        raise NotFound(f"conversation #{chat.id} has no message #{form.message_id}", field="message_id")
    if message.status != "ok":
        raise Conflict("only a finished message can be answered or edited", field="message_id")
    judge = study_judge(session, study)
    if study is None or judge is None:
        raise Conflict("this study has no judge to draft with", field="conversation_id")
    question = None
    if form.purpose == "post_edit":
        if message.role != "assistant":
            raise UnprocessableInput("a post-edit draft rewrites a system reply", field="message_id")
        limit = MAX_POST_EDIT_CHARS
    else:
        question = _draft_question(session, study, message, form.question_id)
        limit = schemas.MAX_ANSWER_CHARS
    config = endpoint_config(judge).model_copy(update={"max_retries": DRAFT_RETRIES})
    return PendingDraft(
        chat_id=chat.id or 0,
        message_id=message.id or 0,
        participant_id=participant.id if participant is not None else chat.participant_id,
        purpose=form.purpose,
        question_id=question["id"] if question else None,
        judge_id=judge.id or 0,
        config=config,
        request=draft_messages(_path(session, message), form.purpose, question),
        limit=limit,
    )


def draft_json(draft: DraftRequest) -> dict[str, Any]:
    return {
        "id": draft.id,
        "conversation_id": draft.chat_id,
        "message_id": draft.message_id,
        "purpose": draft.purpose,
        "question_id": draft.question_id,
        "draft": draft.draft,
        "latency_ms": draft.latency_ms,
        "final_text": draft.final_text,
        "kept_fraction": draft.kept_fraction,
        "created_at": draft.created_at.isoformat(),
    }


def complete_draft(engine: Engine, pending: PendingDraft) -> dict[str, Any]:
    """Ask the judge (no database connection held), log the request with its draft or failure; 503 naming the
    judge, in words, when it failed."""
    started = time.monotonic()
    text, error = "", None
    try:
        text = clean_draft(ChatClient(pending.config).complete(pending.request).text, pending.limit)
        error = None if text else "the assistant wrote an empty draft"
    except EndpointError as exc:
        log.warning("draft for conversation %s failed: %s", pending.chat_id, exc.message)
        error = "the assistant could not write a draft just now; try again"
    with Session(engine) as session:
        draft = DraftRequest(
            chat_id=pending.chat_id,
            message_id=pending.message_id,
            participant_id=pending.participant_id,
            purpose=pending.purpose,
            question_id=pending.question_id,
            judge_id=pending.judge_id,
            draft=text,
            latency_ms=int((time.monotonic() - started) * 1000),
            error=error,
        )
        session.add(draft)
        session.commit()
        session.refresh(draft)
        if error is not None:
            raise ServiceUnavailable(error, field="judge")
        return draft_json(draft)


def record_final_text(
    session: Session, chat: Chat, message_id: int, participant_id: int | None, draft_id: int, final_text: str, *,
    field: str,
) -> DraftRequest:  # fmt: skip
    """The participant submitted the answer or post-edit a draft was asked for: keep the final text and the share
    of the draft's words kept. 422 naming `field` for a draft of another conversation, message or participant.
    Adds to the session; the caller commits with the rest of its writes."""
    draft = session.get(DraftRequest, draft_id)
    if (
        draft is None
        or draft.error is not None
        or (draft.chat_id, draft.message_id, draft.participant_id) != (chat.id, message_id, participant_id)
    ):
        raise UnprocessableInput("no such draft for this message", field=field)
    draft.final_text = final_text
    draft.kept_fraction = kept_fraction(draft.draft, final_text)
    session.add(draft)
    return draft


def drafts_of(session: Session, chat_ids: list[int]) -> list[DraftRequest]:
    query = select(DraftRequest).where(col(DraftRequest.chat_id).in_(chat_ids)).order_by(col(DraftRequest.id))
    return list(session.exec(query))
