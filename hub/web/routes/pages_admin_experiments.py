"""Admin pages for human evaluation: create an experiment (cost shown before launch), launch, close, invite raters,
screen raters and exclude them (reversibly, with a reason; optionally blocking them on Mechanical Turk)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse
from pydantic import ValidationError
from sqlmodel import Session, col, select

from hub.errors import Forbidden, HubError, UnprocessableInput
from hub.models import Backend, Experiment, RaterInvite, Submission, System, User
from hub.services.human import experiment_results, experiments, human_pipeline, raters
from hub.services.human.experiments import AdaptiveOptions
from hub.services.human.rater_decisions import decide_on_rater
from hub.services.publishing.leaderboard import list_datasets
from hub.settings import get_settings
from hub.storage import get_storage
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId, FormId
from hub.web.routes.api_experiments import _backend_launch, _blocker
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, prefix="/admin", tags=["admin pages"], include_in_schema=False)
FORM_FIELDS = (
    "dataset",
    "system_a_id",
    "system_b_id",
    "title",
    "backend",
    "tie_mode",
    "raters_per_prompt",
    "prompts_per_task",
    "reward_usd",
    "fee_percent",
    "attention_checks_per_task",
    "repeats_per_task",
    "task_timeout_minutes",
    "seed",
    "most_informative",
)


def _admin(viewer: User | None) -> User:
    if viewer is None or not viewer.is_admin:
        raise Forbidden("only admins manage human evaluations")
    return viewer


def _judgeable_systems(session: Session) -> list[dict[str, Any]]:
    query = (
        select(System, Submission.dataset_name)
        .join(Submission, col(Submission.system_id) == col(System.id))
        .where(col(Submission.status).in_(experiments.JUDGEABLE))
        .order_by(col(System.name))
    )
    seen: dict[int, dict[str, Any]] = {}
    for system, dataset in session.exec(query):
        entry = seen.setdefault(system.id, {"id": system.id, "name": system.name, "datasets": set()})
        entry["datasets"].add(dataset)
    return [{**e, "datasets": sorted(e["datasets"])} for e in seen.values()]


def _list_context(session: Session, form: dict[str, Any] | None = None, error: HubError | None = None):
    return {
        "experiments": [
            {"experiment": e, "systems": experiment_results.systems_of(session, e)}
            for e in session.exec(select(Experiment).order_by(col(Experiment.id).desc()).limit(200))
        ],
        "systems": _judgeable_systems(session),
        "datasets": [d["name"] for d in list_datasets()],
        "defaults": experiments.ExperimentForm.model_fields,
        "form": form or {},
        "error": error,
    }


@router.get("/experiments")
def experiment_list(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        _admin(viewer)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return page(request, "admin_experiments.html", viewer, _list_context(session))


def _parse_form(raw: dict[str, Any]) -> experiments.ExperimentForm:
    values = {k: v for k, v in raw.items() if k in FORM_FIELDS and v not in ("", None)}
    prompt_ids = [p.strip() for p in str(raw.get("prompt_ids", "")).replace(",", " ").split() if p.strip()]
    if raw.get("adaptive_round_tasks") or raw.get("adaptive_budget"):
        values["adaptive"] = {
            "round_tasks": raw.get("adaptive_round_tasks") or AdaptiveOptions().round_tasks,
            "budget_judgements": raw.get("adaptive_budget") or None,
        }
    try:
        return experiments.ExperimentForm(**values, prompt_ids=prompt_ids)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "form"
        raise UnprocessableInput(first["msg"], field=field) from None


@router.post("/experiments")
async def experiment_create(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    raw = dict((await request.form()).items())
    try:
        admin = _admin(viewer)
        experiment = experiments.create_experiment(session, admin, _parse_form(raw), get_storage())
    except HubError as exc:
        if exc.status_code == 422:  # the form again, filled in, with what is wrong
            return page(request, "admin_experiments.html", viewer, _list_context(session, raw, exc), 422)
        return error_page(request, viewer, exc)
    return RedirectResponse(f"/admin/experiments/{experiment.id}", status_code=303)


def _detail(request: Request, session: Session, viewer: User, experiment_id: int, extra: dict[str, Any] | None = None):
    experiment = experiments.admin_experiment(session, viewer, experiment_id)
    invites = session.exec(select(RaterInvite).where(RaterInvite.experiment_id == experiment.id)).all()
    context = {
        "experiment": experiment,
        "view": experiment_results.results(session, experiment, with_raters=True),
        "invites": invites,
        "rater_ids": {r.public_hash: r.id for r in experiment_results.raters_of(session, experiment.id)},
        "invite_labels": {  # the label the admin typed for the invite each rater came through
            r.public_hash: labels[r.invite_id]
            for labels in [{i.id: i.label or f"invite #{i.id}" for i in invites}]
            for r in experiment_results.raters_of(session, experiment.id)
            if r.invite_id in labels
        },
        "public_url": get_settings().public_url.rstrip("/"),
        "mturk": experiment.backend == Backend.mturk,
        **(extra or {}),
    }
    return page(request, "admin_experiment.html", viewer, context)


@router.get("/experiments/{experiment_id}")
def experiment_detail(request: Request, experiment_id: DatabaseId, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        return _detail(request, session, _admin(viewer), experiment_id)
    except HubError as exc:
        return error_page(request, viewer, exc)


def _act(request: Request, viewer: User | None, action, experiment_id: int):
    if viewer is None:
        return login_redirect(request)
    try:
        action(_admin(viewer))
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse(f"/admin/experiments/{experiment_id}", status_code=303)


@router.post("/experiments/{experiment_id}/launch")
def experiment_launch(
    request: Request, experiment_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep
):
    def launch(admin: User):
        experiment = experiments.admin_experiment(session, admin, experiment_id)
        experiments.launch(session, admin, experiment_id, backend_launch=_backend_launch(experiment))

    return _act(request, viewer, launch, experiment_id)


@router.post("/experiments/{experiment_id}/close")
def experiment_close(
    request: Request, experiment_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep
):
    return _act(request, viewer, lambda admin: human_pipeline.close(session, admin, experiment_id), experiment_id)


@router.post("/experiments/{experiment_id}/invites")
def experiment_invite(
    request: Request,
    experiment_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    label: Annotated[str, Form()] = "",
    cohort: Annotated[bool, Form()] = False,
    max_raters: Annotated[int, Form(ge=1, le=100_000)] = 50,
):
    """The new link is shown on this response only (only its hash is stored)."""
    if viewer is None:
        return login_redirect(request)
    try:
        admin = _admin(viewer)
        experiment = experiments.admin_experiment(session, admin, experiment_id)
        invite, token = raters.create_invite(
            session, admin, experiment, label=label, cohort=cohort, max_raters=max_raters
        )
        new_invite = {"invite": invite, "url": raters.invite_url(token)}
        return _detail(request, session, admin, experiment_id, {"new_invite": new_invite})
    except HubError as exc:
        return error_page(request, viewer, exc)


@router.post("/experiments/{experiment_id}/invites/{invite_id}/revoke")
def invite_revoke(
    request: Request,
    experiment_id: DatabaseId,
    invite_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
):
    def revoke(admin: User):
        raters.revoke_invite(session, admin, experiment_id, invite_id)

    return _act(request, viewer, revoke, experiment_id)


@router.post("/raters/{rater_id}/exclusion")
def rater_exclusion(
    request: Request,
    rater_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    experiment_id: FormId,
    excluded: Annotated[bool, Form()] = True,
    reason: Annotated[str, Form()] = "",
    block: Annotated[bool, Form()] = False,
):
    def exclude(admin: User):
        decide_on_rater(session, admin, rater_id, excluded=excluded, reason=reason, block=_blocker(block))

    return _act(request, viewer, exclude, experiment_id)
