"""The admin's QA page of an experiment's raters' reasons (`/admin/experiments/ID/qa`): the reason option, QA runs
of a rubric with a judge, the admin's PASSED/REDO buttons and the judge's agreement; twin of `api_rater_qa`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from evaluation.rubrics import shipped_rubrics
from hub.errors import HubError, UnprocessableInput
from hub.services.judging import rater_qa, registry
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False, default_response_class=HTMLResponse
)


def _problem(exc: ValidationError) -> UnprocessableInput:
    first = exc.errors(include_input=False, include_url=False)[0]
    return UnprocessableInput(first["msg"], field=".".join(str(p) for p in first["loc"]) or None)


def _qa_page(request: Request, session, viewer, experiment_id: int, problem: HubError | None = None):
    try:
        view = rater_qa.qa_view(session, viewer, experiment_id, limit=200)
    except HubError as exc:
        return error_page(request, viewer, exc)
    context = {
        "qa": view,
        "judges": [registry.judge_json(j) for j in registry.list_judges(session)],
        "rubrics": sorted(shipped_rubrics()),
        "json_url": f"/api/admin/experiments/{experiment_id}/qa",
        "problem": problem,
    }
    return page(request, "admin_rater_qa.html", viewer, context, problem.status_code if problem else 200)


@router.get("/admin/experiments/{experiment_id}/qa")
def qa_page(request: Request, experiment_id: DatabaseId, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    return _qa_page(request, session, viewer, experiment_id)


@router.post("/admin/experiments/{experiment_id}/qa/reasons")
def set_reasons(
    request: Request,
    experiment_id: DatabaseId,
    session: SessionDep,
    viewer: ViewerDep,
    _csrf: CsrfDep,
    reasons: Annotated[str, Form(max_length=10)],
):
    if viewer is None:
        return login_redirect(request)
    try:
        rater_qa.set_reason_mode(session, viewer, experiment_id, rater_qa.ReasonModeForm(reasons=reasons))  # type: ignore[arg-type]
    except ValidationError as exc:
        return _qa_page(request, session, viewer, experiment_id, _problem(exc))
    except HubError as exc:
        return _qa_page(request, session, viewer, experiment_id, exc)
    return RedirectResponse(f"/admin/experiments/{experiment_id}/qa", status_code=303)


@router.post("/admin/experiments/{experiment_id}/qa/runs")
def start_run(
    request: Request,
    experiment_id: DatabaseId,
    session: SessionDep,
    viewer: ViewerDep,
    _csrf: CsrfDep,
    judge_id: Annotated[str, Form(max_length=12)] = "",
    rubric: Annotated[str, Form(max_length=120)] = "milo-qa",
    rubric_yaml: Annotated[str, Form(max_length=registry.MAX_RUBRIC_CHARS)] = "",
):
    if viewer is None:
        return login_redirect(request)
    try:
        form = rater_qa.QaRunForm(
            judge_id=int(judge_id) if judge_id.isdigit() else 0, rubric=rubric, rubric_yaml=rubric_yaml or None
        )
        rater_qa.request_run(session, viewer, experiment_id, form)
    except ValidationError as exc:
        return _qa_page(request, session, viewer, experiment_id, _problem(exc))
    except HubError as exc:
        return _qa_page(request, session, viewer, experiment_id, exc)
    return RedirectResponse(f"/admin/experiments/{experiment_id}/qa", status_code=303)


@router.post("/admin/experiments/{experiment_id}/qa/grades")
def grade(
    request: Request,
    experiment_id: DatabaseId,
    session: SessionDep,
    viewer: ViewerDep,
    _csrf: CsrfDep,
    reason_id: Annotated[str, Form(max_length=18)],
    status: Annotated[str, Form(max_length=10)],
):
    if viewer is None:
        return login_redirect(request)
    try:
        form = rater_qa.AdminGradeForm(reason_id=int(reason_id) if reason_id.isdigit() else 0, status=status)  # type: ignore[arg-type]
        rater_qa.grade_reason(session, viewer, experiment_id, form)
    except ValidationError as exc:
        return _qa_page(request, session, viewer, experiment_id, _problem(exc))
    except HubError as exc:
        return _qa_page(request, session, viewer, experiment_id, exc)
    return RedirectResponse(f"/admin/experiments/{experiment_id}/qa#reason-{reason_id}", status_code=303)
