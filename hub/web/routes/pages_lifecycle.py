"""Researcher pages of the lifecycle: my submissions (withdraw, public/private), notifications, password reset.

Also hands the templates two helpers: `status_words(status)` for the status badge everywhere, and
`unread_notifications(viewer)` for the count in the navigation."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse
from sqlmodel import Session

from hub.db import get_engine
from hub.errors import HubError
from hub.models import User
from hub.services.accounts import rate_limits
from hub.services.notifications import inbox, password_reset
from hub.services.notifications.status_words import status_words
from hub.services.submissions import lifecycle
from hub.settings import get_settings
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.templating import templates
from hub.web.threads import RequestSessionRoute

log = logging.getLogger(__name__)
router = APIRouter(route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False)
TextField = Annotated[str, Form()]


def unread_notifications(viewer: User | None) -> int:
    """For the navigation; 0 when the count cannot be read (the page itself must still render)."""
    if viewer is None:
        return 0
    try:
        with Session(get_engine()) as session:
            return inbox.unread_count(session, viewer)
    except Exception:
        log.warning("unread notifications could not be counted", exc_info=True)
        return 0


templates.env.globals["status_words"] = status_words
templates.env.globals["unread_notifications"] = unread_notifications


# ---- my submissions ----


@router.get("/account/submissions")
def my_submissions(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    return page(request, "my_submissions.html", viewer, {"rows": lifecycle.my_submissions(session, viewer)})


def _act(request: Request, viewer: User | None, action):
    if viewer is None:
        return login_redirect(request)
    try:
        action(viewer)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse("/account/submissions", status_code=303)


@router.post("/account/submissions/{submission_id}/withdraw")
def withdraw(request: Request, submission_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    return _act(request, viewer, lambda user: lifecycle.withdraw(session, user, submission_id))


@router.post("/account/systems/{system_id}/visibility")
def visibility(
    request: Request,
    system_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    is_public: TextField = "",
):
    public = is_public == "1"
    return _act(request, viewer, lambda user: lifecycle.set_visibility(session, user, system_id, public=public))


# ---- notifications ----


@router.get("/notifications")
def notifications(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    context = {"items": inbox.newest(session, viewer), "unread": inbox.unread_count(session, viewer)}
    return page(request, "notifications.html", viewer, context)


@router.post("/notifications/read")
def notifications_read(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    inbox.mark_read(session, viewer)
    return RedirectResponse("/notifications", status_code=303)


# ---- password reset ----


@router.get("/forgot-password")
def forgot_form(request: Request, viewer: ViewerDep):
    context = {"email": "", "done": None, "error": None, "mail_on": bool(get_settings().smtp_host)}
    return page(request, "forgot_password.html", viewer, context)


@router.post("/forgot-password")
def forgot(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep, email: TextField = ""):
    context = {"email": email, "done": None, "error": None, "mail_on": bool(get_settings().smtp_host)}
    try:
        context["done"] = password_reset.request_reset(
            session, email=email[:1_000], client=rate_limits.client_address(request)
        )
    except HubError as exc:
        context["error"] = exc.message
        response = page(request, "forgot_password.html", viewer, context, exc.status_code)
        response.headers.update(exc.response_headers)
        return response
    return page(request, "forgot_password.html", viewer, context)


def _reset_page(request: Request, viewer: User | None, token: str, error: HubError | None = None, done=False):
    context = {"token": token, "error": error.message if error else None, "done": done}
    response = page(request, "reset_password.html", viewer, context, error.status_code if error else 200)
    response.headers["Referrer-Policy"] = "no-referrer"  # the token is in the address
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/reset-password")
def reset_form(request: Request, session: SessionDep, viewer: ViewerDep, token: str = ""):
    try:
        password_reset.check_link(session, token)
    except HubError as exc:
        return _reset_page(request, viewer, "", exc)
    return _reset_page(request, viewer, token)


@router.post("/reset-password")
def reset(
    request: Request,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    token: TextField = "",
    new_password: TextField = "",
):
    try:
        password_reset.reset_password(session, token=token, new_password=new_password)
    except HubError as exc:
        return _reset_page(request, viewer, token if exc.field == "new_password" else "", exc)
    return _reset_page(request, viewer, "", done=True)
