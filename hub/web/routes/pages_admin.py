"""Admin pages: the review queue (approve, reject with a reason, re-run) and the audit log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select

from hub.errors import Forbidden, HubError
from hub.models import Submission, System, User
from hub.queue import enqueue_evaluation
from hub.services.platform import audit
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions import lifecycle, review
from hub.services.submissions.results import read_responses
from hub.storage import get_storage
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, prefix="/admin", tags=["admin pages"], include_in_schema=False)
SAMPLE_SIZE = 3  # responses shown per queued submission: enough to spot copies, junk or the wrong file
AUDIT_ROWS = 200


def _sample(submission: Submission) -> dict[str, Any]:
    """The first prompts with their responses, or why they cannot be shown (the queue page still works)."""
    try:
        dataset = installed_dataset(submission.dataset_name)
        responses = read_responses(get_storage(), submission, dataset)
    except HubError as exc:
        return {"rows": [], "error": exc.message}
    rows = [
        {"prompt_id": prompt.id, "prompt": prompt.context[-1].content, "response": response}
        for prompt, response in zip(dataset.prompts[:SAMPLE_SIZE], responses[:SAMPLE_SIZE], strict=True)
    ]
    return {"rows": rows, "error": None}


def _queue_item(session: Session, submission: Submission) -> dict[str, Any]:
    system = session.get(System, submission.system_id)
    owner = session.get(User, system.owner_id) if system and system.owner_id else None
    baselines = [session.get(System, i) for i in submission.baseline_ids]
    return {
        "submission": submission,
        "system": system,
        "owner": owner,
        "baselines": [b.name for b in baselines if b is not None],
        "sample": _sample(submission),
    }


def _rerunnable(session: Session) -> list[tuple[Submission, System]]:
    query = (
        select(Submission, System)
        .join(System, col(System.id) == col(Submission.system_id))
        .where(col(Submission.status).in_(list(review.RERUNNABLE)))
        .order_by(col(Submission.id).desc())
    )
    return list(session.exec(query))


@router.get("/queue")
def queue(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        waiting = review.queue(session, viewer)
    except HubError as exc:
        return error_page(request, viewer, exc)
    context = {"items": [_queue_item(session, s) for s in waiting], "rerunnable": _rerunnable(session)}
    context["drafts"] = lifecycle.drafts_waiting(session)  # human evaluations waiting for a launch
    return page(request, "admin_queue.html", viewer, context)


def _act(request: Request, viewer: User | None, action, success_url: str):
    """Run one review action for a logged-in admin and go back; a refusal is shown as the error page."""
    if viewer is None:
        return login_redirect(request)
    try:
        action()
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse(success_url, status_code=303)


@router.post("/submissions/{submission_id}/approve")
def approve(request: Request, submission_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    return _act(
        request,
        viewer,
        lambda: review.approve(session, viewer, submission_id, enqueue=enqueue_evaluation),
        "/admin/queue",
    )


@router.post("/submissions/{submission_id}/reject")
def reject(
    request: Request,
    submission_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    reason: Annotated[str, Form()] = "",
):
    return _act(request, viewer, lambda: review.reject(session, viewer, submission_id, reason=reason), "/admin/queue")


@router.post("/submissions/{submission_id}/rerun")
def rerun(request: Request, submission_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    return _act(
        request,
        viewer,
        lambda: review.rerun(session, viewer, submission_id, enqueue=enqueue_evaluation),
        f"/submissions/{submission_id}",
    )


@router.get("/audit")
def audit_log(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    if not viewer.is_admin:
        return error_page(request, viewer, Forbidden("only admins can read the audit log"))
    entries = audit.recent(session, AUDIT_ROWS)
    actor_ids = {e.actor_id for e in entries if e.actor_id is not None}
    actors = {u.id: u.email for u in session.exec(select(User).where(col(User.id).in_(actor_ids)))} if actor_ids else {}
    rows = [
        {"entry": e, "actor": actors.get(e.actor_id, "system") if e.actor_id else "system", "detail": e.detail.items()}
        for e in entries
    ]
    return page(request, "admin_audit.html", viewer, {"entries": rows})
