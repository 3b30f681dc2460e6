"""JSON API of MILO's assistance in a study: the judge's suggestions for a message (shown to the assisted arm only;
other arms get an empty list, so the page cannot tell that they exist) and real-time drafts (the real-time arm)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Body
from sqlmodel import Session, col, select

from hub.db import get_engine
from hub.models import AnnotationSuggestion, Study
from hub.services.judging.registry import validated
from hub.services.studies import assistance, chats, participants, reviews
from hub.web.deps import DatabaseId, SessionDep
from hub.web.openapi_docs import error_responses, json_body
from hub.web.study_viewer import StudyViewerDep
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["studies"], responses=error_responses(403, 404, 409))


@router.get("/api/conversations/{conversation_id}/messages/{message_id}/suggestions")
def message_suggestions(
    conversation_id: DatabaseId, message_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep
) -> dict[str, Any]:
    """The judge's suggestions for one message: {suggestions: [{id, question_id, value, confidence, explanation}]}
    in the assisted arm (and for admins); an empty list in every other arm."""
    chat = reviews.viewable_chat(session, viewer, conversation_id)  # their own, or one they review
    message = chats.message_of(session, chat, message_id)
    study = session.get(Study, chat.study_id)
    annotator = participants.participant_for(session, viewer, chat.study_id)
    arm = reviews.annotator_arm(study, chat, annotator) if study is not None else chat.arm
    if not (viewer.is_admin or arm in chats.ASSISTED_ARMS):
        return {"suggestions": []}
    query = select(AnnotationSuggestion).where(
        AnnotationSuggestion.message_id == message.id, col(AnnotationSuggestion.error).is_(None)
    )
    return {
        "suggestions": [
            {
                "id": s.id,
                "message_id": s.message_id,
                "question_id": s.question_id,
                "value": s.value,
                "confidence": s.confidence,
                "explanation": s.explanation,
            }
            for s in session.exec(query.order_by(col(AnnotationSuggestion.id)))
        ]
    }


@router.post(
    "/api/conversations/{conversation_id}/drafts",
    status_code=201,
    openapi_extra=json_body(assistance.DraftForm),
    responses=error_responses(422, 503),
)
async def request_draft(
    conversation_id: DatabaseId, body: Annotated[dict[str, Any], Body()], viewer: StudyViewerDep
) -> dict[str, Any]:
    """A draft by the study's judge (real-time arm): of a free-text answer (`purpose` free_text, `message_id`,
    `question_id`) or of a post-edit of a system reply (`purpose` post_edit, `message_id`). Send its id as `draft_id`
    with the answer or the edit: how much of the draft was kept is recorded."""
    form = validated(assistance.DraftForm, body)

    def begin() -> assistance.PendingDraft:
        with Session(get_engine()) as session:
            return assistance.begin_draft(session, viewer, conversation_id, form)

    pending = await anyio.to_thread.run_sync(begin)
    return await anyio.to_thread.run_sync(assistance.complete_draft, get_engine(), pending)
