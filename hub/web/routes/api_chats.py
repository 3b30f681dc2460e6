"""JSON API of a study's conversations: start one, send a message and get the system's reply (JSON, or streamed as
server-sent events: `user`, `delta` {text}..., then `done` {message} or `error` {message}), retry a failed reply,
annotate a turn, post-edit the latest system turn, go back to an earlier turn, mark branches, read the whole tree.
Participants reach only their own conversations, admins all; anything else answers 404 alike."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session, col, select

from hub.db import get_engine
from hub.errors import NotFound
from hub.models import Chat
from hub.services.judging.registry import validated
from hub.services.studies import chat_tree, chats, reviews, turns
from hub.services.studies.images import MAX_IMAGES_PER_MESSAGE
from hub.services.studies.participants import Viewer
from hub.storage import get_storage
from hub.web.deps import DatabaseId, SessionDep
from hub.web.openapi_docs import error_responses, json_body
from hub.web.study_viewer import StudyViewerDep
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["studies"], responses=error_responses(403, 404, 409))
JsonBody = Annotated[dict[str, Any], Body()]
T = TypeVar("T")


class StartForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system_id: int | None = Field(default=None, ge=1, le=2**63 - 1, description="Default: the one used least.")


class MessageForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(max_length=turns.MAX_MESSAGE_CHARS)
    images: list[str] | None = Field(
        default=None, max_length=MAX_IMAGES_PER_MESSAGE, description="Ids of uploaded images (vision systems)."
    )


REPLY_RESPONSES: dict[int | str, dict[str, Any]] = {
    201: {
        "description": "The user message and the system's reply (status ok, or error with the failure in words); "
        "with `Accept: text/event-stream` or `?stream=1`: server-sent events user, delta..., done or error.",
        "content": {"application/json": {}, "text/event-stream": {}},
    }
}
StreamFlag = Annotated[bool, Query(description="Stream the reply as server-sent events")]


async def _in_thread(call: Callable[[Session], T]) -> T:
    """Run `call(session)` in a request thread with a session of its own (closed before the thread is given back)."""

    def run() -> T:
        with Session(get_engine()) as session:
            return call(session)

    return await anyio.to_thread.run_sync(run)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


async def _answer(request: Request, pending: turns.PendingTurn, stream: bool):
    """The reply as server-sent events, or (when not asked to stream) as one JSON answer once it is complete."""
    events = turns.produce(get_engine(), pending)
    if stream or "text/event-stream" in request.headers.get("accept", ""):

        async def body() -> AsyncIterator[bytes]:
            if pending.user_message is not None:
                yield _sse("user", {"message": pending.user_message})
            async for event, data in events:
                yield _sse(event, data)

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(body(), status_code=201, media_type="text/event-stream", headers=headers)
    last: dict[str, Any] = {}
    async for event, data in events:
        if event != "delta":
            last = data
    return JSONResponse({"user_message": pending.user_message, "message": last["message"]}, status_code=201)


@router.post("/api/studies/{study_id}/conversations", status_code=201, openapi_extra=json_body(StartForm, False))
def start_conversation(
    study_id: DatabaseId,
    session: SessionDep,
    viewer: StudyViewerDep,
    body: Annotated[dict[str, Any] | None, Body()] = None,
) -> dict[str, Any]:
    """Start a conversation with one of the study's systems (its participants, and admins)."""
    form = validated(StartForm, body or {})
    chat = chats.start_chat(session, viewer, study_id, form.system_id)
    return chats.chat_json(session, chat, admin=viewer.is_admin)


@router.get("/api/studies/{study_id}/conversations")
def list_conversations(study_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> list[dict[str, Any]]:
    """The viewer's conversations in the study (an admin's: all of them), newest first."""
    query = select(Chat).where(Chat.study_id == study_id).order_by(col(Chat.id).desc())
    if not viewer.is_admin:
        participant = viewer.participant_in(study_id)
        if participant is None:
            raise NotFound(f"no study #{study_id}", field="study_id")
        query = query.where(Chat.participant_id == participant)
    return [chats.chat_json(session, chat, admin=viewer.is_admin) for chat in session.exec(query.limit(500))]


@router.get("/api/conversations/{conversation_id}")
def get_conversation(conversation_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> dict[str, Any]:
    """The whole tree: messages with parent ids, branches, reversals, the viewer's annotations, the active leaf.
    Also for a participant reviewing another participant's finished conversation (see the review route)."""
    return chats.tree_json(session, viewer, reviews.viewable_chat(session, viewer, conversation_id))


@router.get("/api/studies/{study_id}/review/next")
def next_review(study_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> dict[str, Any]:
    """Cross-review: the next finished conversation of another participant for this participant to read and
    annotate (the one with the fewest reviewers, lowest id among equals): {conversation_id, reviews, remaining,
    page_url}, or {conversation_id: null, reason} when none is left. 404 for anyone not a participant."""
    return reviews.next_for_review(session, viewer, study_id)


@router.post("/api/conversations/{conversation_id}/finish")
def finish_conversation(conversation_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> dict[str, Any]:
    """End the conversation: it stays readable (and its turns annotatable), no longer continued."""
    return chats.chat_json(session, chats.finish_chat(session, viewer, conversation_id), admin=viewer.is_admin)


@router.post(
    "/api/conversations/{conversation_id}/messages",
    status_code=201,
    responses=REPLY_RESPONSES,
    openapi_extra=json_body(MessageForm),
)
async def send_message(
    conversation_id: DatabaseId, body: JsonBody, request: Request, viewer: StudyViewerDep, stream: StreamFlag = False
):
    """Send the participant's message (text and optional image ids); the system's reply follows."""
    form = validated(MessageForm, body)
    storage = get_storage()
    pending = await _in_thread(
        lambda session: turns.begin_message(session, viewer, storage, conversation_id, form.content, form.images)
    )
    return await _answer(request, pending, stream)


@router.post(
    "/api/conversations/{conversation_id}/messages/{message_id}/retry", status_code=201, responses=REPLY_RESPONSES
)
async def retry_reply(
    conversation_id: DatabaseId,
    message_id: DatabaseId,
    request: Request,
    viewer: StudyViewerDep,
    stream: StreamFlag = False,
):
    """Ask the system again for a reply that failed."""
    storage = get_storage()
    pending = await _in_thread(partial(_retry, viewer, storage, conversation_id, message_id))
    return await _answer(request, pending, stream)


def _retry(viewer: Viewer, storage, conversation_id: int, message_id: int, session: Session) -> turns.PendingTurn:
    return turns.begin_retry(session, viewer, storage, conversation_id, message_id)


@router.put(
    "/api/conversations/{conversation_id}/messages/{message_id}/annotations",
    openapi_extra=json_body(chats.AnnotationsForm),
)
def annotate(
    conversation_id: DatabaseId, message_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep
) -> dict[str, Any]:
    """The viewer's answers about one turn, checked against the study's current schema (replacing earlier ones)."""
    form = validated(chats.AnnotationsForm, body)
    stored = chats.annotate(session, viewer, conversation_id, message_id, form)
    return {"annotations": [chats.annotation_json(a) for a in stored]}


@router.post(
    "/api/conversations/{conversation_id}/messages/{message_id}/edit",
    status_code=201,
    openapi_extra=json_body(chat_tree.EditForm),
)
def edit_reply(
    conversation_id: DatabaseId, message_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep
) -> dict[str, Any]:
    """Post-edit the latest system turn: the edit (with its changed spans) becomes the active branch's last turn."""
    form = validated(chat_tree.EditForm, body)
    edited = chat_tree.edit(session, viewer, conversation_id, message_id, form)
    return {"message": chats.message_json(edited), "current_leaf_id": edited.id}


@router.post("/api/conversations/{conversation_id}/revert", openapi_extra=json_body(chat_tree.RevertForm))
def revert(conversation_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep) -> dict:
    """Go back to an earlier system turn of the active branch (the branch left is kept, closed)."""
    form = validated(chat_tree.RevertForm, body)
    record = chat_tree.revert(session, viewer, conversation_id, form)
    return {"revert_id": record.id, "to_message_id": record.to_message_id, "current_leaf_id": record.to_message_id}


@router.post(
    "/api/conversations/{conversation_id}/branches/{branch_id}/outcome",
    openapi_extra=json_body(chat_tree.OutcomeForm),
)
def branch_outcome(
    conversation_id: DatabaseId, branch_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep
) -> dict[str, Any]:
    """Mark a branch successful or not."""
    form = validated(chat_tree.OutcomeForm, body)
    branch = chat_tree.set_outcome(session, viewer, conversation_id, branch_id, form)
    return {"id": branch.id, "leaf_id": branch.leaf_id, "closed_by": branch.closed_by, "successful": branch.successful}
