"""Pages of LLM judging: the admin page (register judges, attach judges, rubrics and function metrics to datasets,
start runs, see their progress), a dataset's judge report cards (`/judges/DATASET`) and its prediction-powered
ranking (`/ppi/DATASET`); twins of the JSON API in `api_judging`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError
from sqlmodel import col, select

from evaluation.dataset import installed_dataset_dirs
from hub.errors import HubError, UnprocessableInput
from hub.models import JudgingRun
from hub.services.judging import registry, runs, views
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId
from hub.web.read_cache import public_page
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False, default_response_class=HTMLResponse
)
RUNS_SHOWN = 50


def _validation_error(exc: ValidationError) -> UnprocessableInput:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    return UnprocessableInput(first["msg"], field=field)


def _admin_page(request: Request, session, viewer, problem: HubError | None = None):
    judges = registry.list_judges(session)
    recent = session.exec(select(JudgingRun).order_by(col(JudgingRun.id).desc()).limit(RUNS_SHOWN))
    context: dict[str, Any] = {
        "judges": [registry.judge_json(j) for j in judges],
        "attachments": [registry.attachment_json(a) for a in registry.attachments(session)],
        "datasets": sorted(installed_dataset_dirs()),
        "metrics": registry.response_metrics(),
        "runs": [runs.run_json(r) for r in recent],
        "problem": problem,
    }
    return page(request, "admin_judging.html", viewer, context, problem.status_code if problem else 200)


@router.get("/admin/judging")
def admin_judging(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    if not viewer.is_admin:
        return error_page(request, viewer, HubError("only admins can manage judges"))
    return _admin_page(request, session, viewer)


@router.post("/admin/judging/judges")
def register_judge(
    request: Request,
    session: SessionDep,
    viewer: ViewerDep,
    _csrf: CsrfDep,
    name: Annotated[str, Form(max_length=120)],
    base_url: Annotated[str, Form(max_length=2_000)],
    model: Annotated[str, Form(max_length=200)],
    key_ref: Annotated[str, Form(max_length=100)] = "",
    template_version: Annotated[str, Form(max_length=40)] = "pairwise-v1",
    temperature: Annotated[float, Form(ge=0, le=2)] = 0.0,
    max_tokens: Annotated[int, Form(ge=1, le=32_768)] = 512,
    concurrency: Annotated[int, Form(ge=1, le=64)] = 8,
    timeout_s: Annotated[float, Form(ge=1, le=600)] = 60.0,
):
    if viewer is None:
        return login_redirect(request)
    try:
        form = registry.JudgeForm(
            name=name,
            base_url=base_url,
            model=model,
            key_ref=key_ref or None,
            template_version=template_version,
            temperature=temperature,
            max_tokens=max_tokens,
            concurrency=concurrency,
            timeout_s=timeout_s,
        )
        registry.register_judge(session, viewer, form)
    except ValidationError as exc:
        return _admin_page(request, session, viewer, _validation_error(exc))
    except HubError as exc:
        return _admin_page(request, session, viewer, exc)
    return RedirectResponse("/admin/judging", status_code=303)


@router.post("/admin/judging/attach")
def attach(
    request: Request,
    session: SessionDep,
    viewer: ViewerDep,
    _csrf: CsrfDep,
    dataset: Annotated[str, Form(max_length=120)],
    kind: Annotated[str, Form(max_length=20)],
    judge_id: Annotated[str, Form(max_length=12)] = "",
    rubric_yaml: Annotated[str, Form(max_length=registry.MAX_RUBRIC_CHARS)] = "",
    metric: Annotated[str, Form(max_length=120)] = "",
):
    if viewer is None:
        return login_redirect(request)
    try:
        form = registry.AttachForm(
            kind=kind,  # type: ignore[arg-type]
            judge_id=int(judge_id) if judge_id.isdigit() else None,
            rubric_yaml=rubric_yaml or None,
            metric=metric or None,
        )
        registry.attach(session, viewer, dataset, form)
    except ValidationError as exc:
        return _admin_page(request, session, viewer, _validation_error(exc))
    except HubError as exc:
        return _admin_page(request, session, viewer, exc)
    return RedirectResponse("/admin/judging", status_code=303)


@router.post("/admin/submissions/{submission_id}/judge")
def start_run(request: Request, submission_id: DatabaseId, session: SessionDep, viewer: ViewerDep, _csrf: CsrfDep):
    if viewer is None:
        return login_redirect(request)
    try:
        runs.request_run(session, viewer, submission_id)
    except HubError as exc:
        return _admin_page(request, session, viewer, exc)
    return RedirectResponse("/admin/judging", status_code=303)


@router.get("/judges/{dataset}")
@public_page("judges")
def judges_page(request: Request, dataset: str, session: SessionDep, viewer: ViewerDep):
    cards = views.report_cards(session, dataset[:120])
    return page(request, "judges.html", viewer, {"page": cards, "json_url": f"/api/judges/{dataset}"})


@router.get("/ppi/{dataset}")
@public_page("ppi")
def ppi_page(request: Request, dataset: str, session: SessionDep, viewer: ViewerDep):
    ranking = views.ppi_ranking(session, dataset[:120])
    return page(request, "ppi.html", viewer, {"page": ranking, "json_url": f"/api/ppi/{dataset}"})
