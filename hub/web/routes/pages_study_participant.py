"""Participant pages of interactive studies: join by an invite link, the study's home (instructions, start a
conversation with one of its systems, earlier conversations) and the chat page (drawn by hub/static/js/chat.js
from the JSON API). No account is needed: the browser session holds the participant."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse
from sqlmodel import col, select

from hub.errors import HubError, NotFound
from hub.models import Chat, Study, StudySystem, User
from hub.services.accounts.rate_limits import client_address
from hub.services.studies import chats, images, participants, reviews, studies
from hub.services.studies.participants import Viewer, session_participants
from hub.web.csrf import CsrfDep, csrf_token
from hub.web.deps import DatabaseId, SessionDep, optional_user
from hub.web.inputs import parse_id
from hub.web.routes.pages_account import error_page, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, prefix="/studies", tags=["study pages"], include_in_schema=False)


def page_viewer(request: Request, user: Annotated[User | None, Depends(optional_user)]) -> Viewer:
    """Who is asking, for pages: forms carry their CSRF token as a field (CsrfDep checks it), not as the header
    the JSON API's study viewer asks participants for."""
    return Viewer(user=user, participants=session_participants(request.session))


PageViewerDep = Annotated[Viewer, Depends(page_viewer)]


def _study_for(session, viewer: Viewer, study_id: int) -> Study:
    """The study for one of its participants or an admin; 404 alike for everyone else."""
    study = session.get(Study, study_id)
    if study is None or not (viewer.is_admin or participants.participant_for(session, viewer, study_id) is not None):
        raise NotFound(f"no study #{study_id} (open your invite link to join it)", field="study_id")
    return study


@router.get("/join/{token}")
def join_page(request: Request, token: str, session: SessionDep, viewer: PageViewerDep):
    """What the study is, and a button to join it (a link preview never makes a participant)."""
    try:
        _invite, study = participants.invite_for_token(session, token)
    except HubError as exc:
        return error_page(request, viewer.user, exc)
    if participants.participant_for(session, viewer, study.id or 0) is not None:
        return RedirectResponse(f"/studies/{study.id}", status_code=303)
    return page(request, "studies/join.html", viewer.user, {"study": study, "token": token})


@router.post("/join/{token}")
def join(request: Request, token: str, _csrf: CsrfDep, session: SessionDep, viewer: PageViewerDep):
    try:
        _participant, study = participants.join(session, request.session, token, client=client_address(request))
    except HubError as exc:
        return error_page(request, viewer.user, exc)
    return RedirectResponse(f"/studies/{study.id}", status_code=303)


@router.get("/{study_id}")
def study_home(request: Request, study_id: DatabaseId, session: SessionDep, viewer: PageViewerDep):
    try:
        study = _study_for(session, viewer, study_id)
    except HubError as exc:
        return error_page(request, viewer.user, exc)
    participant = participants.participant_for(session, viewer, study_id)
    query = select(Chat).where(Chat.study_id == study_id)
    if participant is not None:
        query = query.where(Chat.participant_id == participant.id)
    else:
        query = query.where(Chat.created_by_id == (viewer.user.id if viewer.user else -1))
    own = list(session.exec(query.order_by(col(Chat.id).desc()).limit(200)))
    systems = {s.id: s for s in studies.systems_of(session, study_id)}
    context = {"study": study, "systems": list(systems.values()), "chats": own, "labels": systems}
    context["can_review"] = participant is not None and study.status == "open"  # cross-review: reviews.py
    context["nothing_to_review"] = request.query_params.get("review") == "none"
    return page(request, "studies/home.html", viewer.user, context)


@router.get("/{study_id}/review")
def review_next(request: Request, study_id: DatabaseId, session: SessionDep, viewer: PageViewerDep):
    """Cross-review: open the next finished conversation of another participant, read-only, to annotate it."""
    try:
        found = reviews.next_for_review(session, viewer, study_id)
    except HubError as exc:
        return error_page(request, viewer.user, exc)
    if found["conversation_id"] is None:
        return RedirectResponse(f"/studies/{study_id}?review=none", status_code=303)
    return RedirectResponse(found["page_url"], status_code=303)


@router.post("/{study_id}/conversations")
async def start_conversation(
    request: Request, study_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: PageViewerDep
):
    try:
        _study_for(session, viewer, study_id)
        system_id = parse_id((await request.form()).get("system_id", ""), field="system_id")
        chat = chats.start_chat(session, viewer, study_id, system_id)
    except HubError as exc:
        return error_page(request, viewer.user, exc)
    return RedirectResponse(f"/studies/{study_id}/conversations/{chat.id}", status_code=303)


def chat_config(
    request: Request,
    study: Study,
    system: StudySystem,
    chat: Chat,
    schema: dict[str, Any],
    *,
    admin: bool,
    someone_elses: bool,
) -> dict:
    """What chat.js needs to start: where the API is, the questions to ask, the system's label and abilities."""
    base = f"/api/conversations/{chat.id}"
    return {
        "conversation_url": base,
        "messages_url": f"{base}/messages",
        "revert_url": f"{base}/revert",
        "branches_url": f"{base}/branches",
        "finish_url": f"{base}/finish",
        "drafts_url": f"{base}/drafts",
        "images_url": f"{base}/images/",
        "upload_url": f"/api/studies/{study.id}/images",
        "questions": schema.get("questions", []),
        "edit_reason_required": bool(schema.get("edit_reason_required")),
        "system_label": system.label,
        "vision": system.vision,
        "max_images": images.MAX_IMAGES_PER_MESSAGE,
        "csrf_token": csrf_token(request),
        "study_status": study.status,
        "admin": admin,
        "someone_elses": someone_elses,
    }


@router.get("/{study_id}/conversations/{chat_id}")
def chat_page(request: Request, study_id: DatabaseId, chat_id: DatabaseId, session: SessionDep, viewer: PageViewerDep):
    try:
        chat = reviews.viewable_chat(session, viewer, chat_id)  # also another participant's, to review it
        if chat.study_id != study_id:
            raise NotFound(f"no conversation #{chat_id}", field="conversation_id")
        study = studies.get_study(session, study_id)
        system = session.get(StudySystem, chat.system_id)
        if system is None:
            raise NotFound(f"no conversation #{chat_id}", field="conversation_id")
    except HubError as exc:
        return error_page(request, viewer.user, exc)
    schema = studies.schema_version(session, study).definition
    participant = participants.participant_for(session, viewer, study_id)
    # an admin looking at a participant's conversation reads it; only its participant continues it
    own = chat.participant_id is None or (participant is not None and participant.id == chat.participant_id)
    reviewing = reviews.is_reviewer(viewer, chat)
    context = {
        "study": study,
        "system": system,
        "chat": chat,
        "config": chat_config(request, study, system, chat, schema, admin=viewer.is_admin, someone_elses=not own),
        "max_image_mb": images.MAX_IMAGE_BYTES // (1024 * 1024),
    }
    context["config"]["reviewing"] = reviewing
    return page(request, "studies/chat.html", viewer.user, context)
