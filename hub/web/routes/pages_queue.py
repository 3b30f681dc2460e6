"""The public queue page (`/queue`): its JSON twin is `/api/queue`."""

from __future__ import annotations

from fastapi import APIRouter, Request

from hub.services.submissions import queue_view
from hub.web.deps import SessionDep, ViewerDep
from hub.web.routes.pages_account import page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False)


@router.get("/queue")
def queue(request: Request, session: SessionDep, viewer: ViewerDep):
    response = page(request, "queue.html", viewer, {"queue": queue_view.public_queue(session, viewer)})
    response.headers["Cache-Control"] = "no-store"
    return response
