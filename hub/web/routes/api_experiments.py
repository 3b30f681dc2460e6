"""JSON API for human evaluations: admins create, launch and close experiments, invite raters and exclude them;
everyone reads the results of the experiments they may see."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from hub.errors import Forbidden
from hub.models import Backend
from hub.services.human import experiment_access, experiment_results, experiments, human_pipeline, raters
from hub.services.human.rater_decisions import decide_on_rater
from hub.services.platform.pagination import paginate
from hub.services.statistics import irt_plan
from hub.storage import get_storage
from hub.web import pagination
from hub.web.deps import DatabaseId, SessionDep, UserDep, ViewerDep
from hub.web.inputs import QueryId
from hub.web.openapi_docs import error_responses
from hub.web.pagination import PageDep
from hub.web.read_cache import public_page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["human evaluation"], responses=error_responses(403, 404, 409))


def _backend_launch(experiment):
    """MTurk experiments create their HITs at launch; the hub's own pages need nothing."""
    if experiment.backend != Backend.mturk:
        return None
    from hub.services.human import mturk

    client = mturk.mturk_client()
    return lambda session, e: mturk.launch_hits(session, e, client)


def _blocker(block: bool):
    """`block` for `raters.set_excluded`: blocks the worker on MTurk. The client is built only when asked to block,
    so a hub without MTurk credentials never needs one."""
    if not block:
        return None
    from hub.services.human import mturk

    return mturk.worker_blocker(mturk.mturk_client())


@router.post("/api/experiments", status_code=201)
def create(form: experiments.ExperimentForm, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """A draft experiment with its cost estimate; nothing is shown to raters until launch."""
    experiment = experiments.create_experiment(session, admin, form, get_storage())
    return experiment_results.results(session, experiment, with_raters=True)


@router.get("/api/experiments/plan")
def plan(
    session: SessionDep,
    admin: UserDep,
    dataset: str,
    system_a: QueryId,
    system_b: QueryId,
) -> dict[str, Any]:
    """Admins: the dataset's prompts ranked by expected information about system A vs B (the newest IRT fit's
    discriminations at its estimated gap); create with `most_informative: N` to judge only the top N."""
    if not admin.is_admin:
        raise Forbidden("only admins plan experiments")
    return irt_plan.plan(session, dataset, system_a, system_b)


@router.get("/api/experiments")
@public_page("api-experiments")
def list_experiments(
    request: Request,
    response: Response,
    session: SessionDep,
    viewer: ViewerDep,
    page: PageDep,
    dataset: str | None = None,
) -> list[dict[str, Any]]:
    """One page of the experiments the viewer may see, newest first; the `X-Total-Count` header counts them all
    and `Link` has the `next` and `prev` pages."""
    visible = experiment_access.visible_experiments(session, viewer, dataset=dataset)
    chosen = paginate(len(visible), page)
    pagination.set_headers(response, request, chosen)
    return [
        experiment_results.experiment_json(e, *experiment_results.systems_of(session, e))
        for e in visible[chosen.start : chosen.stop]
    ]


@router.get("/api/experiments/{experiment_id}")
@public_page("api-experiment")
def show(experiment_id: DatabaseId, request: Request, session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    """Results: wins, ties, losses, win rate with interval, sign test, agreement; the rater table for admins."""
    experiment = experiment_access.visible_experiment(session, experiment_id, viewer)
    return experiment_results.results(session, experiment, with_raters=bool(viewer and viewer.is_admin))


@router.post("/api/experiments/{experiment_id}/launch")
def launch(experiment_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    experiment = experiments.admin_experiment(session, admin, experiment_id)
    experiment = experiments.launch(session, admin, experiment_id, backend_launch=_backend_launch(experiment))
    return experiment_results.results(session, experiment, with_raters=True)


@router.post("/api/experiments/{experiment_id}/close")
def close(experiment_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    return experiment_results.results(session, human_pipeline.close(session, admin, experiment_id), with_raters=True)


class InviteForm(BaseModel):
    label: str = Field(default="", max_length=200)
    cohort: bool = Field(default=False, description="One link for a group: each browser becomes its own rater.")
    max_raters: int = Field(default=50, ge=1, le=100_000, description="Cohort links: how many raters it may create.")


@router.post("/api/experiments/{experiment_id}/invites", status_code=201)
def invite(experiment_id: DatabaseId, body: InviteForm, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """A new invite link (shown once: only its hash is kept)."""
    experiment = experiments.admin_experiment(session, admin, experiment_id)
    created, token = raters.create_invite(
        session, admin, experiment, label=body.label, cohort=body.cohort, max_raters=body.max_raters
    )
    return {
        "id": created.id,
        "label": created.label,
        "cohort": created.cohort,
        "max_raters": created.max_raters,
        "token": token,
        "url": raters.invite_url(token),
    }


@router.post("/api/experiments/{experiment_id}/invites/{invite_id}/revoke")
def revoke_invite(experiment_id: DatabaseId, invite_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict:
    """The link stops working at once; ratings already made with it stay."""
    revoked = raters.revoke_invite(session, admin, experiment_id, invite_id)
    return {"id": revoked.id, "revoked_at": revoked.revoked_at.isoformat() if revoked.revoked_at else None}


class Exclusion(BaseModel):
    excluded: bool = True
    reason: str = Field(default="", max_length=2_000)
    block: bool = Field(default=False, description="Also block the worker on Mechanical Turk.")


@router.post("/api/raters/{rater_id}/exclusion")
def exclude(rater_id: DatabaseId, body: Exclusion, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """Exclude a rater's judgements from results (reversible; the ratings stay, flagged), optionally block them."""
    rater = decide_on_rater(
        session,
        admin,
        rater_id,
        excluded=body.excluded,
        reason=body.reason,
        block=_blocker(body.block),
    )
    return {
        "id": rater.id,
        "rater": rater.public_hash,
        "backend": rater.backend,
        "excluded": rater.excluded,
        "exclusion_reason": rater.exclusion_reason,
        "blocked": rater.blocked,
        "reviewed_at": rater.reviewed_at.isoformat() if rater.reviewed_at else None,
    }
