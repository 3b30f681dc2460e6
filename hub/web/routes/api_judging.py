"""JSON API of LLM judging: admins register judges, attach judges, rubrics and function metrics to datasets and
start judging runs; anyone reads a dataset's judge report cards, judge judgements and prediction-powered ranking."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse

from hub.errors import Forbidden, NotFound
from hub.models import JudgingRun
from hub.services.judging import registry, runs, views
from hub.web.deps import DatabaseId, SessionDep, UserDep
from hub.web.openapi_docs import error_responses
from hub.web.read_cache import public_page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["judging"], responses=error_responses(403, 404, 409))


def _body(form) -> dict[str, Any]:
    """The request body's schema in the OpenAPI document (the route validates it itself, see registry.validated)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": form.model_json_schema()}}}}


def _admin(user) -> None:
    if not user.is_admin:
        raise Forbidden("only admins can manage judges")


@router.get("/api/admin/judges")
def list_judges(session: SessionDep, admin: UserDep) -> list[dict[str, Any]]:
    _admin(admin)
    return [registry.judge_json(j) for j in registry.list_judges(session)]


@router.post("/api/admin/judges", status_code=201, openapi_extra=_body(registry.JudgeForm))
def register_judge(body: Annotated[dict[str, Any], Body()], session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """Fields as JudgeForm; a bad one gets a 422 naming it without echoing its value (never a pasted key)."""
    _admin(admin)
    return registry.judge_json(registry.register_judge(session, admin, registry.validated(registry.JudgeForm, body)))


@router.get("/api/admin/datasets/{dataset}/judging")
def list_attachments(dataset: str, session: SessionDep, admin: UserDep) -> list[dict[str, Any]]:
    _admin(admin)
    return [registry.attachment_json(a) for a in registry.attachments(session, dataset[:120])]


@router.post("/api/admin/datasets/{dataset}/judging", status_code=201, openapi_extra=_body(registry.AttachForm))
def attach(dataset: str, body: Annotated[dict[str, Any], Body()], session: SessionDep, admin: UserDep) -> dict:
    _admin(admin)
    form = registry.validated(registry.AttachForm, body)
    return registry.attachment_json(registry.attach(session, admin, dataset[:120], form))


@router.post("/api/admin/submissions/{submission_id}/judge", status_code=202)
def start_run(submission_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    return runs.run_json(runs.request_run(session, admin, submission_id))


@router.get("/api/admin/submissions/{submission_id}/judging")
def submission_run(submission_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """The submission's latest judging run: status (queued, running, done, failed), progress and per-step counts."""
    _admin(admin)
    run = runs.latest_run(session, submission_id)
    if run is None:
        raise NotFound(f"submission #{submission_id} has no judging run")
    return runs.run_json(run)


@router.get("/api/admin/judging/runs/{run_id}")
def run_status(run_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    _admin(admin)
    run = session.get(JudgingRun, run_id)
    if run is None:
        raise NotFound(f"no judging run #{run_id}")
    return runs.run_json(run)


@router.get("/api/judges/{dataset}")
@public_page("api-judges")
def report_cards(request: Request, dataset: str, session: SessionDep) -> dict[str, Any]:
    """Each judge of the dataset with its report card against the public human judgements."""
    return views.report_cards(session, dataset[:120])


@router.get("/api/judges/{dataset}/judgements")
@public_page("api-judge-judgements")
def judgements(request: Request, dataset: str, session: SessionDep) -> JSONResponse:
    """The judge judgements between public systems, in the ratings download's shape (`backend`: judge)."""
    return JSONResponse(views.judge_rows(session, dataset[:120]))


@router.get("/api/ppi/{dataset}")
@public_page("api-ppi")
def ppi(request: Request, dataset: str, session: SessionDep) -> dict[str, Any]:
    """Human-only, judge-only and PPI++ abilities with intervals, rank sets and the effective human sample size."""
    return views.ppi_ranking(session, dataset[:120])
