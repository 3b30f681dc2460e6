"""JSON API for submissions: create with files (token or session), follow status and scores."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import select
from starlette.concurrency import run_in_threadpool

from hub.models import Score, Submission, System
from hub.services.notifications.status_words import submission_words
from hub.services.submissions import quotas
from hub.services.submissions.submissions import create_submissions, get_visible
from hub.storage import get_storage
from hub.web.deps import DatabaseId, SessionDep, UserDep, ViewerDep
from hub.web.openapi_docs import SUBMISSION_FORM, error_responses
from hub.web.submission_form import system_form, uploads
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute,
    prefix="/api/submissions",
    tags=["submissions"],
    responses=error_responses(403, 404, 409),
)


def submission_json(
    submission: Submission, system: System, scores: list[Score], *, private: bool, admin: bool = False
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": submission.id,
        "system": {"id": system.id, "name": system.name, "is_public": system.is_public},
        "dataset": submission.dataset_name,
        "dataset_fingerprint": submission.dataset_fingerprint,
        "status": submission.status,
        "status_words": submission_words(submission.status).as_dict(),  # meaning, next step, who acts
        "progress": submission.progress,
        "review_reason": submission.review_reason,
        "baseline_ids": submission.baseline_ids,
        "responses_sha256": submission.responses_sha256,
        "created_at": submission.created_at.isoformat(),
        "scores": [
            {"metric": s.metric, "version": s.version, "signature": s.signature, "corpus": s.corpus} for s in scores
        ],
    }
    if private:  # failure details can quote the file; only owner and admins see them
        data["error"] = submission.error
        data["evaluation"] = {  # runs, and workers lost mid-run (each one retried by the sweep)
            "attempts": submission.attempts,
            "worker_losses": submission.worker_losses,
            "retrying_after_worker_loss": submission.status == "evaluating" and submission.worker_losses > 0,
            "started_at": submission.started_at.isoformat() if submission.started_at else None,
            "heartbeat_at": submission.heartbeat_at.isoformat() if submission.heartbeat_at else None,
            "worker_id": submission.worker_id if admin else None,  # host:pid, for admins only
        }
    return data


@router.post("", status_code=201, openapi_extra=SUBMISSION_FORM, responses=error_responses(429))
async def create(request: Request, session: SessionDep, user: UserDep) -> list[dict[str, Any]]:
    """Multipart form: name, description, paper_url, code_url, weights_url, is_public, baselines (repeatable),
    and one `responses[DATASET]` file per dataset plus optional `loglik[DATASET]` files."""
    quotas.take_attempt(user)  # every upload counts toward the daily attempts, valid or not (429 past it)
    form = await request.form()
    system = system_form(form)
    responses, logliks = await run_in_threadpool(uploads, form)
    # Validation of a large file takes a while: off the event loop, so other requests are served meanwhile.
    created = await run_in_threadpool(
        create_submissions, session, get_storage(), owner=user, form=system, responses=responses, logliks=logliks
    )
    created_system = session.get(System, created[0].system_id)
    return [submission_json(s, created_system, [], private=True) for s in created]


@router.get("/{submission_id}")
def show(submission_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    submission, system = get_visible(session, submission_id, viewer)
    scores = list(session.exec(select(Score).where(Score.submission_id == submission.id).order_by(Score.id)))
    private = viewer is not None and (viewer.is_admin or viewer.id == system.owner_id)
    return submission_json(submission, system, scores, private=private, admin=viewer is not None and viewer.is_admin)
