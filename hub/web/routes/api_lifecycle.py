"""JSON API of a researcher's lifecycle: their submissions (`GET /api/submissions?mine=1`), withdrawing one,
a system's public/private choice, and their notifications."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from hub.errors import BadRequest
from hub.services.notifications import inbox
from hub.services.submissions import lifecycle
from hub.web.deps import DatabaseId, SessionDep, UserDep
from hub.web.openapi_docs import error_responses
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["submissions"], responses=error_responses(404, 409))


class Visibility(BaseModel):
    is_public: bool = Field(description="true: results public once approved; false: owner and admins only.")


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
