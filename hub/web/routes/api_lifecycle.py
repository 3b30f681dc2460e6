"""JSON API of a researcher's lifecycle: their submissions (`GET /api/submissions?mine=1`), withdrawing one,
a system's public/private choice, their notifications, and password reset by e-mail (asking for a link, using it)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field

from hub.errors import BadRequest
from hub.services.accounts import rate_limits
from hub.services.notifications import inbox, password_reset
from hub.services.submissions import lifecycle
from hub.web.deps import DatabaseId, SessionDep, UserDep
from hub.web.openapi_docs import error_responses
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["submissions"], responses=error_responses(404, 409))


class Visibility(BaseModel):
    is_public: bool = Field(description="true: results public once approved; false: owner and admins only.")


class ResetRequest(BaseModel):
    email: str = Field(max_length=1_000, description="The account's address; the answer is the same for any.")


class ResetConfirm(BaseModel):
    token: str = Field(max_length=1_000, description="The token of the link the mail brought (`?token=...`).")
    new_password: str = Field(max_length=4_096, description="10 to 1024 characters.")


class MarkRead(BaseModel):
    ids: list[int] | None = Field(default=None, max_length=1_000, description="Notification ids; omitted: all.")


@router.get("/api/submissions")
def my_submissions(
    session: SessionDep,
    user: UserDep,
    mine: Annotated[int, Query(ge=0, le=1, description="1: the caller's own submissions (the only listing).")] = 0,
) -> list[dict[str, Any]]:
    """The caller's submissions, newest first, each status in words (what it means, what happens next, who acts)."""
    if mine != 1:
        raise BadRequest("list your own submissions with mine=1; public results are on /api/leaderboards", field="mine")
    return lifecycle.my_submissions(session, user)


@router.post("/api/submissions/{submission_id}/withdraw")
def withdraw(submission_id: DatabaseId, session: SessionDep, user: UserDep) -> dict[str, Any]:
    """Take one of your submissions off every public page and download (its records are kept)."""
    submission = lifecycle.withdraw(session, user, submission_id)
    return lifecycle.my_submission(session, submission)


@router.post("/api/systems/{system_id}/visibility")
def visibility(system_id: DatabaseId, body: Visibility, session: SessionDep, user: UserDep) -> dict[str, Any]:
    """Make one of your systems public or private (audited)."""
    system = lifecycle.set_visibility(session, user, system_id, public=body.is_public)
    return {"id": system.id, "name": system.name, "is_public": system.is_public}


@router.get("/api/notifications", tags=["notifications"])
def notifications(session: SessionDep, user: UserDep) -> dict[str, Any]:
    """Your newest notifications and how many are unread."""
    return inbox.listing(session, user)


@router.post("/api/notifications/read", tags=["notifications"])
def mark_read(body: MarkRead, session: SessionDep, user: UserDep) -> dict[str, Any]:
    """Mark some (ids) or all of your notifications read."""
    inbox.mark_read(session, user, body.ids)
    return {"unread": inbox.unread_count(session, user)}


@router.post("/api/password-reset", status_code=202, tags=["accounts"], responses=error_responses(400, 429, 503))
def ask_password_reset(body: ResetRequest, request: Request, session: SessionDep) -> dict[str, str]:
    """Ask for a password-reset link by e-mail. The answer (and the work behind it) is the same whether or not an
    account uses the address: the sending job looks the account up. Limited per client address (429 with
    Retry-After); 503 when the hub sends no e-mail."""
    client = rate_limits.client_address(request)
    return {"message": password_reset.request_reset(session, email=body.email, client=client)}


@router.post("/api/password-reset/confirm", tags=["accounts"], responses=error_responses(400))
def confirm_password_reset(body: ResetConfirm, session: SessionDep, response: Response) -> dict[str, str]:
    """Set a new password with the token of a reset link: once, before it expires; every browser session of the
    account ends and its other links stop working. 400 naming `token` (invalid, expired or used) or
    `new_password`."""
    response.headers["Cache-Control"] = "no-store"
    password_reset.reset_password(session, token=body.token, new_password=body.new_password)
    return {"message": "password changed; sign in with the new one"}
