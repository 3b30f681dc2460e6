"""Images in study conversations: a participant (or an admin) uploads an image for a vision system, and whoever may
read a conversation sees the images sent in it. Checks and storage: hub/services/studies/images.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Request, Response, UploadFile
from sqlmodel import select
from starlette.concurrency import run_in_threadpool

from hub.errors import NotFound, UnprocessableInput
from hub.models import ChatMessage, Study
from hub.services.accounts import rate_limits
from hub.services.accounts.rate_limits import client_address
from hub.services.studies import images, participants, reviews, studies
from hub.storage import get_storage
from hub.web.deps import DatabaseId, SessionDep
from hub.web.openapi_docs import error_responses
from hub.web.study_viewer import StudyViewerDep
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["studies"], responses=error_responses(403, 404))
UPLOAD_PATH = "/api/studies/{study_id}/images"


@router.post(UPLOAD_PATH, status_code=201)
async def upload_image(
    request: Request,
    study_id: DatabaseId,
    session: SessionDep,
    viewer: StudyViewerDep,
    image: Annotated[UploadFile, File(description="PNG, JPEG, WebP or GIF; the type is read from the bytes")],
) -> dict[str, Any]:
    """Store an image to send with a message (`images: [id]`) to a system of this study that accepts images."""
    study = session.get(Study, study_id)
    if study is None or not (viewer.is_admin or participants.participant_for(session, viewer, study_id)):
        raise NotFound(f"no study #{study_id}", field="study_id")
    if not any(system.vision for system in studies.systems_of(session, study_id)):
        raise UnprocessableInput("no system of this study accepts images", field="image")
    if study.status != "open" and not viewer.is_admin:
        raise UnprocessableInput(f"the study is {study.status}; images cannot be sent now", field="image")
    rate_limits.take(rate_limits.STUDY_IMAGE_CLIENT, client_address(request))  # every upload counts, good or bad
    data = await image.read(images.MAX_IMAGE_BYTES + 1)  # one byte over is enough to refuse
    stored = await run_in_threadpool(images.store_image, get_storage(), data, field="image")
    return {"id": stored.key, "mime": stored.mime, "size": stored.size}


@router.get(
    "/api/conversations/{chat_id}/images/{key}",
    responses={200: {"content": {"image/png": {}, "image/jpeg": {}, "image/webp": {}, "image/gif": {}}}},
    response_class=Response,
)
def conversation_image(chat_id: DatabaseId, key: str, session: SessionDep, viewer: StudyViewerDep) -> Response:
    """An image sent in this conversation, for whoever may read the conversation."""
    chat = reviews.viewable_chat(session, viewer, chat_id)  # its participant, an admin, or a reviewer
    if not images.KEY.fullmatch(key):
        raise NotFound("no such image in this conversation", field="key")
    sent = session.exec(select(ChatMessage.images).where(ChatMessage.chat_id == chat.id, ChatMessage.role == "user"))
    if not any(isinstance(ref, dict) and ref.get("key") == key for refs in sent for ref in (refs or [])):
        raise NotFound("no such image in this conversation", field="key")
    data, mime = images.image_bytes(get_storage(), {"key": key})
    return Response(data, media_type=mime, headers={"Cache-Control": "private, max-age=86400"})
