"""JSON API for submissions: create with files (token or session), follow status and scores."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from hub.errors import BadRequest
from hub.models import Score, Submission, System
from hub.services.submissions import SystemForm, UploadedFile, create_submissions, get_visible
from hub.storage import get_storage
from hub.web.deps import DatabaseId, SessionDep, UserDep, ViewerDep

router = APIRouter(prefix="/api/submissions", tags=["submissions"])
FILE_FIELD = re.compile(r"^(responses|loglik)\[([a-z0-9][a-z0-9._-]*)\]$")


def submission_json(submission: Submission, system: System, scores: list[Score], *, private: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": submission.id,
        "system": {"id": system.id, "name": system.name, "is_public": system.is_public},
        "dataset": submission.dataset_name,
        "dataset_fingerprint": submission.dataset_fingerprint,
        "status": submission.status,
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
    return data


async def _read_files(request: Request) -> tuple[dict, dict[str, UploadedFile], dict[str, UploadedFile]]:
    form = await request.form()
    responses: dict[str, UploadedFile] = {}
    logliks: dict[str, UploadedFile] = {}
    for key, value in form.multi_items():
        if not isinstance(value, UploadFile):  # plain form fields are read by the caller
            continue
        if not value.filename and not value.size:  # browsers send unused file inputs as empty nameless parts
            continue
        match = FILE_FIELD.match(key)
        if not match:
            raise BadRequest(f"unexpected file field {key!r}; use responses[DATASET] or loglik[DATASET]", field=key)
        target = responses if match.group(1) == "responses" else logliks
        target[match.group(2)] = UploadedFile(value.filename or key, await value.read())
    return form, responses, logliks


@router.post("", status_code=201)
async def create(request: Request, session: SessionDep, user: UserDep) -> list[dict[str, Any]]:
    """Multipart form: name, description, paper_url, code_url, weights_url, is_public, baselines (repeatable),
    and one `responses[DATASET]` file per dataset plus optional `loglik[DATASET]` files."""
    form, responses, logliks = await _read_files(request)
    try:
        baselines = [int(v) for v in form.getlist("baselines") if str(v).strip()]
    except ValueError as exc:
        raise BadRequest("baselines must be system ids", field="baselines") from exc
    system_form = SystemForm(
        name=str(form.get("name", "")),
        description=str(form.get("description", "")),
        paper_url=str(form.get("paper_url", "")) or None,
        code_url=str(form.get("code_url", "")) or None,
        weights_url=str(form.get("weights_url", "")) or None,
        is_public=str(form.get("is_public", "")).lower() in ("1", "true", "on", "yes"),
        baseline_ids=baselines,
    )
    # Validation of a large file takes a while: off the event loop, so other requests are served meanwhile.
    created = await run_in_threadpool(
        create_submissions, session, get_storage(), owner=user, form=system_form, responses=responses, logliks=logliks
    )
    system = session.get(System, created[0].system_id)
    return [submission_json(s, system, [], private=True) for s in created]


@router.get("/{submission_id}")
def show(submission_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    submission, system = get_visible(session, submission_id, viewer)
    scores = list(session.exec(select(Score).where(Score.submission_id == submission.id).order_by(Score.id)))
    private = viewer is not None and (viewer.is_admin or viewer.id == system.owner_id)
    return submission_json(submission, system, scores, private=private)
