"""JSON API for admins: the review queue, approve / reject / re-run, and the audit log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, UploadFile
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from hub.errors import Forbidden, PayloadTooLarge
from hub.models import System
from hub.queue import enqueue_evaluation
from hub.services.platform import audit, outbox
from hub.services.submissions import attached, review
from hub.services.submissions.submissions import UploadedFile
from hub.settings import get_settings
from hub.storage import get_storage
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


@router.post("/systems/{system_id}/responses", status_code=201, responses=error_responses(413, 422))
async def attach_responses(
    system_id: DatabaseId,
    session: SessionDep,
    admin: UserDep,
    dataset: Annotated[str, Form(min_length=1, max_length=120, description="The installed dataset answered.")],
    responses: Annotated[UploadFile, File(description="Text (one line per prompt) or JSONL response file.")],
    allow_empty: Annotated[bool, Form(description="Blank lines are meant as empty responses.")] = False,
) -> dict[str, Any]:
    """Attach responses to an existing system (e.g. one imported with the original ChatEval's votes) and queue
    their evaluation: its automatic scores join its human and IRT results. The same file again adds nothing."""
    limit = get_settings().max_upload_bytes
    if responses.size is not None and responses.size > limit:
        raise PayloadTooLarge(
            f"{responses.filename} is {responses.size:,} bytes; the limit is {limit:,}", field="responses"
        )
    upload = UploadedFile(responses.filename or "responses.txt", await responses.read(limit + 1))
    submission, job = await run_in_threadpool(
        attached.attach_responses,
        session,
        get_storage(),
        actor=admin,
        system_id=system_id,
        dataset_name=dataset,
        upload=upload,
        allow_empty=allow_empty,
    )
    if job is not None:
        outbox.dispatch(session, job, lambda waiting: enqueue_evaluation(waiting.submission_id))
    return {**_json(session, submission), "attached": job is not None}


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
