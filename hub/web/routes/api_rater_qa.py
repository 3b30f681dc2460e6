"""JSON API of MILO's QA of human work (admins only): ask an experiment's raters for reasons, run a QA rubric with
a registered judge over them, grade reasons yourself, and read the judge's grades and its agreement with yours."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from hub.services.judging import rater_qa
from hub.services.judging.registry import validated
from hub.web.deps import DatabaseId, SessionDep, UserDep
from hub.web.openapi_docs import error_responses
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["rater QA"], responses=error_responses(403, 404, 409))


def _body(form) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": form.model_json_schema()}}}}


@router.get("/api/admin/experiments/{experiment_id}/qa")
def qa(
    experiment_id: DatabaseId,
    session: SessionDep,
    admin: UserDep,
    run: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    limit: Annotated[int, Query(ge=1, le=1_000)] = 50,
) -> dict[str, Any]:
    """Reasons in sample order with the judge's (newest run, or `run`) and the admin's grades; the agreement."""
    return rater_qa.qa_view(session, admin, experiment_id, run_id=run, limit=limit)


@router.post("/api/admin/experiments/{experiment_id}/qa/reasons", openapi_extra=_body(rater_qa.ReasonModeForm))
def set_reasons(
    experiment_id: DatabaseId, body: Annotated[dict[str, Any], Body()], session: SessionDep, admin: UserDep
) -> dict[str, Any]:
    form = validated(rater_qa.ReasonModeForm, body)
    experiment = rater_qa.set_reason_mode(session, admin, experiment_id, form)
    return {"experiment_id": experiment.id, "reasons": form.reasons}


@router.post("/api/admin/experiments/{experiment_id}/qa/runs", status_code=202, openapi_extra=_body(rater_qa.QaRunForm))
def start_run(
    experiment_id: DatabaseId, body: Annotated[dict[str, Any], Body()], session: SessionDep, admin: UserDep
) -> dict[str, Any]:
    form = validated(rater_qa.QaRunForm, body)
    return rater_qa.run_json(rater_qa.request_run(session, admin, experiment_id, form))


@router.post("/api/admin/experiments/{experiment_id}/qa/grades", openapi_extra=_body(rater_qa.AdminGradeForm))
def grade(
    experiment_id: DatabaseId, body: Annotated[dict[str, Any], Body()], session: SessionDep, admin: UserDep
) -> dict[str, Any]:
    form = validated(rater_qa.AdminGradeForm, body)
    stored = rater_qa.grade_reason(session, admin, experiment_id, form)
    return {"reason_id": stored.reason_id, "status": stored.status}
