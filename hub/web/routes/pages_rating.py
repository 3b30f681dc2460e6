"""Rater pages: open an invite link, judge a block of pairs, get a completion code. No login and no cookie needed
(Mechanical Turk frames the same page from another site): the assignment id and its key travel in the form."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from hub.errors import Forbidden, NotFound, UnprocessableInput
from hub.models import Assignment, Experiment, ExperimentItem, Rater, RaterInvite, TieMode
from hub.services.accounts.rate_limits import client_address
from hub.services.human import assignments, raters, rating_reasons
from hub.web.deps import DatabaseId, SessionDep
from hub.web.openapi_docs import error_responses
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute, ends_transaction

router = APIRouter(route_class=RequestSessionRoute, tags=["rating"], responses=error_responses(403, 404, 409))
CHOICE_LABELS = {
    TieMode.single: (("left", "Reply 1 is better"), ("tie", "Tie"), ("right", "Reply 2 is better")),
    TieMode.split: (
        ("left", "Reply 1 is better"),
        ("both_good", "Both good"),
        ("both_bad", "Both bad"),
        ("right", "Reply 2 is better"),
    ),
}
COHORT_SESSION_KEY = "cohort_raters"


def choices_for(experiment: Experiment) -> list[dict[str, str]]:
    return [
        {"value": value, "label": label, "key": str(i + 1)}
        for i, (value, label) in enumerate(CHOICE_LABELS[experiment.tie_mode])
    ]


def render_task(
    request: Request,
    experiment: Experiment,
    items: list[ExperimentItem],
    *,
    form_action: str,
    hidden: dict[str, Any],
    preview: bool = False,
    errors: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """The one rating page, for every backend."""
    context = {
        "experiment": experiment,
        "items": items,
        "choices": choices_for(experiment),
        "form_action": form_action,
        "hidden": hidden,
        "preview": preview,
        "errors": errors,
        "reasons": rating_reasons.reason_mode(experiment),
        "reason_chars": rating_reasons.MAX_REASON_CHARS,
    }
    return render(request, "rate.html", context, status_code=status_code)


def choices_from_form(form) -> dict[int, str]:
    """`choice_<item id>` fields; a malformed item id is refused, naming the field."""
    choices: dict[int, str] = {}
    for name, value in form.multi_items():
        if not name.startswith("choice_"):
            continue
        raw = name.removeprefix("choice_")
        if not raw.isdigit() or len(raw) > 18:
            raise UnprocessableInput(f"{name!r} does not name a pair of this task", field=name)
        if int(raw) in choices:
            raise UnprocessableInput("one answer per pair", field=name)
        choices[int(raw)] = str(value)
    return choices


def _invite_rater(request: Request, session: Session, invite: RaterInvite) -> Rater:
    """A personal invite is one rater; a cohort invite makes each browser a rater (remembered in the session)."""
    client = client_address(request)
    if not invite.cohort:
        return raters.invite_rater(session, invite, client=client)
    known = dict(request.session.get(COHORT_SESSION_KEY) or {})
    browser = known.get(str(invite.id))
    if isinstance(browser, str):  # sessions from before kept the whole external id
        browser = browser.removeprefix(f"invite:{invite.id}:")
    if not isinstance(browser, str) or not browser:
        browser = secrets.token_hex(8)
    rater = raters.invite_rater(session, invite, client=client, label=browser)  # refused: nothing remembered
    if known.get(str(invite.id)) != browser:
        known[str(invite.id)] = browser
        request.session[COHORT_SESSION_KEY] = known
    return rater


def _invite_experiment(session: Session, token: str) -> tuple[RaterInvite, Experiment]:
    invite = raters.invite_for_token(session, token)
    experiment = session.get(Experiment, invite.experiment_id)
    if experiment is None:
        raise NotFound("this invite link is not valid")
    return invite, experiment


def _nothing_left(request: Request) -> HTMLResponse:
    message = "There is nothing left for you to rate in this study. Thank you for your help!"
    return render(request, "error.html", {"status_code": 200, "message": message, "viewer": None}, status_code=200)


@router.get("/rate/{token}", response_class=HTMLResponse, include_in_schema=False)
def rate_page(request: Request, token: str, session: SessionDep):
    """Open an invite link: the rater's unfinished block, else a new one."""
    invite, experiment = _invite_experiment(session, token)
    rater = _invite_rater(request, session, invite)
    assignment = assignments.claim_task(session, experiment, rater)
    if assignment is None:
        return _nothing_left(request)
    return render_task(
        request,
        experiment,
        assignments.task_items(session, assignment.task_id),
        form_action=f"/rate/{token}",
        hidden={"assignment_id": assignment.id, "key": assignments.assignment_key(assignment)},
    )


def _check_invite_owns(session: Session, invite: RaterInvite, assignment: Assignment) -> None:
    if assignment.experiment_id != invite.experiment_id:
        raise Forbidden("this link belongs to another study than the task submitted")
    rater = session.get(Rater, assignment.rater_id)
    if rater is None or not raters.came_through(rater, invite):  # e.g. a task claimed through a revoked invite
        raise Forbidden("this task was claimed through another invite link; submit it through that link")


@router.post("/rate/{token}", response_class=HTMLResponse, include_in_schema=False)
async def rate_submit(request: Request, token: str, session: SessionDep):
    form = await request.form()  # the whole body first, then the database work on a request thread (not the loop)
    return await run_in_threadpool(_rate_submit, request, token, session, form)


@ends_transaction
def _rate_submit(request: Request, token: str, session: Session, form: FormData) -> HTMLResponse:
    invite, experiment = _invite_experiment(session, token)
    raw_id, key = str(form.get("assignment_id", "")), str(form.get("key", ""))
    if not raw_id.isdigit() or len(raw_id) > 18:
        raise UnprocessableInput("the form lost its assignment id; open the link again", field="assignment_id")
    assignment = assignments.assignment_for_key(session, int(raw_id), key)
    _check_invite_owns(session, invite, assignment)
    try:
        reasons = rating_reasons.reasons_from_form(form.multi_items())
        done = assignments.submit(session, assignment, choices_from_form(form), reasons)
    except UnprocessableInput as exc:  # show the block again with what is wrong; nothing was stored
        items = assignments.task_items(session, assignment.task_id)
        hidden = {"assignment_id": assignment.id, "key": key}
        return render_task(
            request,
            experiment,
            items,
            form_action=f"/rate/{token}",
            hidden=hidden,
            errors=exc.message,
            status_code=422,
        )
    return render(request, "rate_done.html", {"code": done.completion_code, "next_url": f"/rate/{token}"})


# ---- the same flow as JSON, for scripts and load tests ----


class RatingSubmission(BaseModel):
    key: str = Field(min_length=1, max_length=100)
    choices: dict[int, str] = Field(description="item id -> left | right | tie | both_good | both_bad")
    reasons: dict[int, str] = Field(
        default_factory=dict, max_length=1_000, description="item id -> a short free-text reason (when the study asks)"
    )


def task_json(assignment: Assignment, experiment: Experiment, items: list[ExperimentItem]) -> dict[str, Any]:
    return {
        "assignment_id": assignment.id,
        "key": assignments.assignment_key(assignment),
        "experiment_id": experiment.id,
        "choices": [c["value"] for c in choices_for(experiment)],
        "reasons": rating_reasons.reason_mode(experiment),
        "items": [{"id": i.id, "context": i.context, "left": i.left_text, "right": i.right_text} for i in items],
    }


@router.post("/api/rate/{token}/claim")
def api_claim(request: Request, token: str, session: SessionDep, rater_label: str | None = None) -> dict[str, Any]:
    """Claim a block through an invite (`rater_label` names the rater within a cohort invite)."""
    invite, experiment = _invite_experiment(session, token)
    if invite.cohort and rater_label:
        rater = raters.invite_rater(session, invite, client=client_address(request), label=rater_label)
    else:
        rater = _invite_rater(request, session, invite)
    assignment = assignments.claim_task(session, experiment, rater)
    if assignment is None:
        raise NotFound("nothing left to rate for this rater")
    return task_json(assignment, experiment, assignments.task_items(session, assignment.task_id))


@router.post("/api/rate/{token}/assignments/{assignment_id}")
def api_submit(token: str, assignment_id: DatabaseId, body: RatingSubmission, session: SessionDep) -> dict[str, Any]:
    invite, _ = _invite_experiment(session, token)
    assignment = assignments.assignment_for_key(session, assignment_id, body.key)
    _check_invite_owns(session, invite, assignment)
    done = assignments.submit(session, assignment, body.choices, body.reasons)
    return {"assignment_id": done.id, "completion_code": done.completion_code, "status": done.status}
