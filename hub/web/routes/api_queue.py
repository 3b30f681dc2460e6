"""JSON API of the public queue (`GET /api/queue`) and of the caller's daily submission quota
(`GET /api/account/quota`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from hub.services.submissions import queue_view, quotas
from hub.web.deps import SessionDep, UserDep, ViewerDep
from hub.web.openapi_docs import error_responses
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["submissions"], responses=error_responses())


@router.get("/api/queue")
def queue(session: SessionDep, viewer: ViewerDep, response: Response) -> dict[str, Any]:
    """Waiting for review, waiting for evaluation, evaluating, done and failed today (UTC), with the position of each
    of the caller's submissions. Submissions the caller may not open are only counted; reasons for their owners."""
    response.headers["Cache-Control"] = "no-store"  # it depends on who asks
    return queue_view.public_queue(session, viewer)


@router.get("/api/account/quota")
def quota(session: SessionDep, user: UserDep, response: Response) -> dict[str, Any]:
    """Your daily submission quota: used, left, and when it resets (00:00 UTC). Admins are exempt."""
    response.headers["Cache-Control"] = "no-store"
    return quotas.quota(session, user).as_dict()
