"""Conversation-set pages: the list, the upload form, a set's results (aggregates by role, its conversations) and
one conversation's turns with their values; the admin's review and re-run buttons. JSON twins under /api/."""

from __future__ import annotations

import urllib.parse
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from hub.errors import HubError
from hub.services.conversations import uploads, views
from hub.services.publishing.leaderboard import list_datasets
from hub.services.submissions import quotas
from hub.storage import get_storage
from hub.web import pagination
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId
from hub.web.routes.api_conversations import ConversationId, set_form, uploaded_file
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False)
ACTIVE = {"queued", "evaluating"}  # the page reloads itself while the worker is busy


@router.get("/conversation-sets")
def list_page(request: Request, session: SessionDep, viewer: ViewerDep):
    sets = uploads.visible_sets(session, viewer)
    return page(request, "conversation_sets.html", viewer, {"sets": sets, "api_url": "/api/conversation-sets"})


def _form_page(request: Request, session, viewer, status_code: int = 200, **extra):
    context = {
        "quota": quotas.quota(session, viewer),  # shared with response-file submissions
        "values": {"name": "", "description": "", "dataset": ""},
        "datasets": list_datasets(),
        "is_public": False,
        "error": None,
        "field": None,
        **extra,
    }
    return page(request, "conversation_set_new.html", viewer, context, status_code)


@router.get("/conversation-sets/new")
def new_form(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    return _form_page(request, session, viewer)


@router.post("/conversation-sets/new")
async def upload(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    form = await request.form()
    try:
        quotas.take_attempt(viewer)  # every upload counts toward the daily attempts, valid or not
        fields = set_form(form)
        file = await run_in_threadpool(uploaded_file, form)
        created = await run_in_threadpool(
            uploads.create_set, session, get_storage(), owner=viewer, form=fields, upload=file
        )
    except HubError as exc:  # the form comes back as sent (the file cannot), with the message naming the line
        values = {key: str(form.get(key, "")) for key in ("name", "description", "dataset")}
        extra = {"values": values, "is_public": form.get("is_public") is not None}
        refused = await run_in_threadpool(
            _form_page, request, session, viewer, exc.status_code, error=exc.message, field=exc.field, **extra
        )
        refused.headers.update(exc.response_headers)  # Retry-After on a quota's 429
        return refused
    return RedirectResponse(f"/conversation-sets/{created.id}", status_code=303)


@router.get("/conversation-sets/{set_id}")
def results_page(
    request: Request, set_id: DatabaseId, session: SessionDep, viewer: ViewerDep, page_at: pagination.PageDep
):
    try:
        conversation_set = uploads.get_visible(session, set_id, viewer)
    except HubError as exc:
        return error_page(request, viewer, exc)
    items, pages = views.conversations_page(session, set_id, page_at)
    context = {
        "set": conversation_set,
        "private": uploads.is_private_view(conversation_set, viewer),
        "aggregates": views.aggregates(session, set_id),
        "items": items,
        "pagination": pagination.links(request, pages),
        "refresh": conversation_set.status in ACTIVE,
        "percent": round(max(0.0, min(1.0, conversation_set.progress)) * 100),
        "quote": urllib.parse.quote,
        "api_url": f"/api/conversation-sets/{set_id}",
        "download_url": f"/api/conversation-sets/{set_id}/turns.jsonl",
    }
    return page(request, "conversation_set.html", viewer, context)


@router.get("/conversation-sets/{set_id}/conversation")
def conversation_page(
    request: Request, set_id: DatabaseId, conversation_id: ConversationId, session: SessionDep, viewer: ViewerDep
):
    try:
        conversation_set = uploads.get_visible(session, set_id, viewer)
        detail = views.conversation_detail(session, get_storage(), conversation_set, conversation_id)
    except HubError as exc:
        return error_page(request, viewer, exc)
    query = urllib.parse.urlencode({"id": conversation_id})
    context = {
        "set": conversation_set,
        "detail": detail,
        "api_url": f"/api/conversation-sets/{set_id}/conversation?{query}",
    }
    return page(request, "conversation.html", viewer, context)


@router.post("/conversation-sets/{set_id}/review")
def review(
    request: Request,
    set_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    action: Annotated[str, Form(pattern="^(approve|reject)$")],
    reason: Annotated[str, Form(max_length=5_000)] = "",
):
    if viewer is None:
        return login_redirect(request)
    try:
        uploads.review(session, viewer, set_id, approve=action == "approve", reason=reason)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse(f"/conversation-sets/{set_id}", status_code=303)


@router.post("/conversation-sets/{set_id}/rerun")
def rerun(request: Request, set_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        uploads.rerun(session, viewer, set_id)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse(f"/conversation-sets/{set_id}", status_code=303)
