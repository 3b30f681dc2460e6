"""JSON API for admins: the review queue, approve / reject / re-run, and the audit log."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from hub.errors import Forbidden
from hub.models import System
from hub.queue import enqueue_evaluation
from hub.services.platform import audit
from hub.services.submissions import review
from hub.web.deps import DatabaseId, SessionDep, UserDep
from hub.web.openapi_docs import error_responses
from hub.web.routes.api_submissions import submission_json
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, prefix="/api/admin", tags=["admin"], responses=error_responses(403, 404, 409)
)


class Rejection(BaseModel):
    reason: str = Field(max_length=2_000, description="Shown to the submitter.")


def _json(session, submission) -> dict[str, Any]:
    return submission_json(submission, session.get(System, submission.system_id), [], private=True)


@router.get("/queue")
def review_queue(session: SessionDep, admin: UserDep) -> list[dict[str, Any]]:
    return [_json(session, s) for s in review.queue(session, admin)]


@router.post("/submissions/{submission_id}/approve")
def approve(submission_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    return _json(session, review.approve(session, admin, submission_id, enqueue=enqueue_evaluation))


@router.post("/submissions/{submission_id}/reject")
def reject(submission_id: DatabaseId, body: Rejection, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    return _json(session, review.reject(session, admin, submission_id, reason=body.reason))


@router.post("/submissions/{submission_id}/rerun")
def rerun(submission_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    return _json(session, review.rerun(session, admin, submission_id, enqueue=enqueue_evaluation))


@router.get("/audit")
def audit_log(session: SessionDep, admin: UserDep) -> list[dict[str, Any]]:
    if not admin.is_admin:
        raise Forbidden("only admins can read the audit log")
    return [
        {
            "id": e.id,
            "actor_id": e.actor_id,
            "action": e.action,
            "target": e.target,
            "detail": e.detail,
            "created_at": e.created_at.isoformat(),
        }
        for e in audit.recent(session)
    ]
