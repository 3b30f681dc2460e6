"""Mechanical Turk's ExternalQuestion: MTurk frames `/mturk/experiments/{id}/task` with `assignmentId`, `hitId`,
`workerId` and `turkSubmitTo`. The same rating page as invite links (`pages_rating.render_task`):

- preview (`assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`): the HIT's pairs, no answers, nothing stored;
- accepted: the worker's assignment of the HIT's task (claimed on first sight), answered and submitted here;
- submitted: the completion page posts `assignmentId` to `{turkSubmitTo}/mturk/externalSubmit`, and the periodic
  poll (`hub.services.human.mturk.poll_experiment`) approves the assignment since the hub holds its ratings.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from hub.errors import Forbidden, NotFound, UnprocessableInput
from hub.models import Assignment, Backend, Experiment
from hub.services.human import assignments, mturk, rating_reasons
from hub.web.deps import DatabaseId, SessionDep
from hub.web.routes.pages_rating import choices_from_form, render_task
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute, ends_transaction

router = APIRouter(route_class=RequestSessionRoute, tags=["rating"], include_in_schema=False)
MTURK_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _mturk_id(value: object, name: str) -> str:
    text = str(value or "")
    if not MTURK_ID.fullmatch(text):
        raise UnprocessableInput(f"{name} is missing or malformed: open this task from Mechanical Turk", field=name)
    return text


def _experiment(session: Session, experiment_id: int) -> Experiment:
    experiment = session.get(Experiment, experiment_id)
    if experiment is None or experiment.backend != Backend.mturk:
        raise NotFound(f"no Mechanical Turk experiment #{experiment_id} on this hub")
    return experiment


def _done(request: Request, assignment: Assignment, turk_submit_to: str) -> HTMLResponse:
    context = {
        "code": assignment.completion_code,
        "external_submit": mturk.submit_url(turk_submit_to),
        "external_assignment_id": assignment.external_assignment_id,
    }
    return render(request, "rate_done.html", context)


def _form(
    request: Request,
    session: Session,
    experiment: Experiment,
    assignment: Assignment,
    params: dict[str, str],
    **extra,
) -> HTMLResponse:
    hidden = {"assignment_id": assignment.id, "key": assignments.assignment_key(assignment), **params}
    return render_task(
        request,
        experiment,
        assignments.task_items(session, assignment.task_id),
        form_action=f"/mturk/experiments/{experiment.id}/task",
        hidden=hidden,
        **extra,
    )


@router.get("/mturk/experiments/{experiment_id}/task", response_class=HTMLResponse)
def mturk_task_page(request: Request, experiment_id: DatabaseId, session: SessionDep):
    query = request.query_params
    experiment = _experiment(session, experiment_id)
    hit_id = _mturk_id(query.get("hitId"), "hitId")
    task = mturk.find_task_for_hit(session, experiment, hit_id)
    assignment_id = _mturk_id(query.get("assignmentId"), "assignmentId")
    if assignment_id == mturk.PREVIEW_ASSIGNMENT:
        items = assignments.task_items(session, task.id)
        return render_task(request, experiment, items, form_action="", hidden={}, preview=True)
    worker_id = _mturk_id(query.get("workerId"), "workerId")
    turk_submit_to = str(query.get("turkSubmitTo", ""))
    mturk.submit_url(turk_submit_to)  # refuse a forged destination before anything is stored
    assignment = mturk.claim_for_worker(session, experiment, task, worker_id, assignment_id)
    if assignment.status in assignments.DONE:
        return _done(request, assignment, turk_submit_to)
    params = {"assignmentId": assignment_id, "hitId": hit_id, "turkSubmitTo": turk_submit_to}
    return _form(request, session, experiment, assignment, params)


@router.post("/mturk/experiments/{experiment_id}/task", response_class=HTMLResponse)
async def mturk_task_submit(request: Request, experiment_id: DatabaseId, session: SessionDep):
    form = await request.form()  # the whole body first, then the database work on a request thread (not the loop)
    return await run_in_threadpool(_mturk_task_submit, request, experiment_id, session, form)


@ends_transaction
def _mturk_task_submit(request: Request, experiment_id: int, session: Session, form: FormData) -> HTMLResponse:
    experiment = _experiment(session, experiment_id)
    raw_id, key = str(form.get("assignment_id", "")), str(form.get("key", ""))
    if not raw_id.isdigit() or len(raw_id) > 18:
        raise UnprocessableInput("the form lost its assignment id; reload the HIT", field="assignment_id")
    assignment = assignments.assignment_for_key(session, int(raw_id), key)
    external_id = _mturk_id(form.get("assignmentId"), "assignmentId")
    if assignment.experiment_id != experiment.id or assignment.external_assignment_id != external_id:
        raise Forbidden("this form belongs to another HIT or assignment; reload the HIT")
    turk_submit_to = str(form.get("turkSubmitTo", ""))
    mturk.submit_url(turk_submit_to)
    params = {
        "assignmentId": external_id,
        "hitId": _mturk_id(form.get("hitId"), "hitId"),
        "turkSubmitTo": turk_submit_to,
    }
    try:
        reasons = rating_reasons.reasons_from_form(form.multi_items())
        done = assignments.submit(session, assignment, choices_from_form(form), reasons)
    except UnprocessableInput as exc:  # show the block again with what is wrong; nothing was stored
        return _form(request, session, experiment, assignment, params, errors=exc.message, status_code=422)
    return _done(request, done, turk_submit_to)
