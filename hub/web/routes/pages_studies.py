"""Admin pages of interactive studies: the list and the creation form (systems, instructions, annotation schema
uploaded or pasted as YAML/JSON with its errors shown by line, assistance, cap), and a study's page (settings,
schema versions to download and re-upload, opening and closing, invite links)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.datastructures import FormData, UploadFile

from hub.errors import Forbidden, HubError, UnprocessableInput
from hub.models import Chat, Judge, StudySchema, User
from hub.services.studies import participants, studies
from hub.services.studies import schema as schemas
from hub.web.csrf import CsrfDep
from hub.web.deps import DatabaseId, SessionDep, ViewerDep
from hub.web.routes.pages_account import error_page, login_redirect, page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, prefix="/admin", tags=["admin pages"], include_in_schema=False)
SYSTEM_SLOTS = 3  # system fieldsets on the form; a slot left without a label is not a system
SYSTEM_FIELDS = ("label", "base_url", "model", "key_ref", "system_prompt", "temperature", "max_tokens", "timeout_s")
SYSTEM_NUMBERS = ("history_turns",)
ARMS = ("unassisted", "assisted", "realtime")
LINE = re.compile(r"\bline (\d+)\b")
EXAMPLE_SCHEMA = """\
questions:
  - id: helpful
    kind: likert
    question: How helpful is this reply?
    labels: [Not at all, A little, Mostly, Completely]
    applies_to: system
  - id: correct
    kind: binary
    question: Is the reply factually correct?
    explanation: required
  - id: intent
    kind: choice
    question: What does the user want here?
    labels: [Information, Advice, Chit-chat]
    applies_to: user
edit_reason_required: true
"""


def _admin(viewer: User | None) -> User:
    if viewer is None or not viewer.is_admin:
        raise Forbidden("only admins manage studies")
    return viewer


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


async def _schema_text(form: FormData) -> tuple[str | None, str]:
    """The schema from the uploaded file (preferred) or the text box, and its format (from the file name or the
    form's choice)."""
    chosen = _text(form, "schema_format") or "yaml"
    upload = form.get("schema_file")
    if isinstance(upload, UploadFile) and upload.filename:
        limit = schemas.MAX_SCHEMA_CHARS * 4  # UTF-8 takes at most 4 bytes per character
        raw = await upload.read(limit + 1)
        if len(raw) > limit:
            raise UnprocessableInput(f"the schema file is larger than {limit:,} bytes", field="schema_file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UnprocessableInput("the schema file is not UTF-8 text", field="schema_file") from None
        lower = upload.filename.lower()
        fmt = "json" if lower.endswith(".json") else "yaml" if lower.endswith((".yaml", ".yml")) else chosen
        return text, fmt
    text = form.get("schema_text")
    return (text if isinstance(text, str) and text.strip() else None), chosen


def _systems(form: FormData, session: Session) -> list[dict[str, Any]]:
    """The system fieldsets that have a label; a registered judge endpoint fills in what was left empty."""
    systems = []
    for slot in range(SYSTEM_SLOTS):
        values = {name: _text(form, f"s{slot}_{name}") for name in (*SYSTEM_FIELDS, *SYSTEM_NUMBERS)}
        if not values["label"]:
            continue
        endpoint = _text(form, f"s{slot}_endpoint")
        if endpoint.isdigit() and (judge := session.get(Judge, int(endpoint))) is not None:
            values["base_url"] = values["base_url"] or judge.base_url
            values["model"] = values["model"] or judge.model
            values["key_ref"] = values["key_ref"] or (judge.key_ref or "")
        system: dict[str, Any] = {k: v for k, v in values.items() if v != "" or k == "system_prompt"}
        if system.get("key_ref") == "":
            system.pop("key_ref")
        system["vision"] = form.get(f"s{slot}_vision") == "true"
        systems.append(system)
    return systems


def _assistance(form: FormData) -> dict[str, Any]:
    assistance: dict[str, Any] = {"mode": _text(form, "assistance_mode") or "none"}
    if judge := _text(form, "assistance_judge_id"):
        assistance["judge_id"] = judge
    if randomise := _text(form, "assistance_randomise"):
        assistance["randomise"] = randomise
    arms = [arm for arm in form.getlist("assistance_arms") if arm in ARMS]
    if arms:
        assistance["arms"] = arms
    if seed := _text(form, "assistance_seed"):
        assistance["seed"] = seed
    return assistance


async def _study_body(form: FormData, session: Session) -> dict[str, Any]:
    text, fmt = await _schema_text(form)
    body: dict[str, Any] = {
        "title": _text(form, "title"),
        "instructions": _text(form, "instructions"),
        "systems": _systems(form, session),
        "assistance": _assistance(form),
        "status": "open" if form.get("open_now") == "true" else "draft",
        "schema_format": fmt,
    }
    if text is not None:
        body["schema_text"] = text
    if cap := _text(form, "max_participants"):
        body["max_participants"] = cap
    return body


def numbered_lines(text: str | None, error: HubError | None) -> list[dict[str, Any]]:
    """The schema text as numbered lines, the one an error names marked, so the form shows where it is wrong."""
    if not text or error is None or not (found := LINE.search(error.message)):
        return []
    bad = int(found.group(1))
    return [{"number": i, "text": line, "bad": i == bad} for i, line in enumerate(text.splitlines(), start=1)]


def _list_context(
    session: Session,
    admin: User,
    form: dict[str, Any] | None = None,
    error: HubError | None = None,
    lines: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    rows = [
        {"study": s, "systems": studies.systems_of(session, s.id or 0)} for s in studies.list_studies(session, admin)
    ]
    return {
        "rows": rows,
        "judges": list(session.exec(select(Judge).order_by(col(Judge.name)))),
        "slots": range(SYSTEM_SLOTS),
        "arms": ARMS,
        "form": form or {},
        "error": error,
        "schema_lines": lines or [],
        "example_schema": EXAMPLE_SCHEMA,
    }


@router.get("/studies")
def study_list(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        admin = _admin(viewer)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return page(request, "studies/admin_list.html", viewer, _list_context(session, admin))


@router.post("/studies")
async def study_create(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    form = await request.form()
    raw = {k: v for k, v in form.multi_items() if isinstance(v, str)}
    raw["assistance_arms"] = form.getlist("assistance_arms")
    body: dict[str, Any] = {}
    try:
        admin = _admin(viewer)
        body = await _study_body(form, session)
        study = studies.create_study(session, admin, body)
    except HubError as exc:
        if exc.status_code != 422:
            return error_page(request, viewer, exc)
        lines = numbered_lines(body.get("schema_text"), exc) if exc.field == "schema_text" else []
        context = _list_context(session, admin, raw, exc, lines)
        return page(request, "studies/admin_list.html", viewer, context, 422)
    return RedirectResponse(f"/admin/studies/{study.id}", status_code=303)


def _detail(request: Request, session: Session, admin: User, study_id: int, extra: dict[str, Any] | None = None):
    study = studies.get_study(session, study_id)
    query = select(StudySchema.version).where(StudySchema.study_id == study.id)
    versions = session.exec(query.order_by(col(StudySchema.version).desc())).all()
    context = {
        "study": study,
        "view": studies.study_json(session, study, admin=True),
        "versions": versions,
        "invites": participants.list_invites(session, study),
        "chats": len(session.exec(select(Chat.id).where(Chat.study_id == study.id)).all()),
        "judge": session.get(Judge, study.assistance.get("judge_id") or 0)
        if study.assistance.get("judge_id")
        else None,
        **(extra or {}),
    }
    return page(request, "studies/admin_study.html", admin, context, 422 if extra and extra.get("error") else 200)


@router.get("/studies/{study_id}")
def study_detail(request: Request, study_id: DatabaseId, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        return _detail(request, session, _admin(viewer), study_id)
    except HubError as exc:
        return error_page(request, viewer, exc)


@router.post("/studies/{study_id}/status")
async def study_status(request: Request, study_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        admin = _admin(viewer)
        form = await request.form()
        study = studies.get_study(session, study_id)
        public = {"true": True, "false": False}.get(_text(form, "public"))  # absent: left as it is
        studies.set_status(session, admin, study, _text(form, "status") or study.status, public=public)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse(f"/admin/studies/{study_id}", status_code=303)


@router.post("/studies/{study_id}/schema")
async def study_schema(request: Request, study_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    """Re-upload the schema: a new version; a refused one is shown with its lines numbered."""
    if viewer is None:
        return login_redirect(request)
    text: str | None = None
    try:
        admin = _admin(viewer)
        study = studies.get_study(session, study_id)
        text, fmt = await _schema_text(await request.form())
        if text is None:
            raise UnprocessableInput("choose a schema file or paste the schema", field="schema_text")
        studies.upload_schema(session, admin, study, {"schema_text": text, "schema_format": fmt})
    except HubError as exc:
        if exc.status_code != 422 or viewer is None or not viewer.is_admin:
            return error_page(request, viewer, exc)
        extra = {"error": exc, "schema_lines": numbered_lines(text, exc), "schema_text": text or ""}
        return _detail(request, session, viewer, study_id, extra)
    return RedirectResponse(f"/admin/studies/{study_id}", status_code=303)


@router.post("/studies/{study_id}/invites")
async def study_invite(request: Request, study_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    """The new link is shown on this response only (only its hash is stored)."""
    if viewer is None:
        return login_redirect(request)
    try:
        admin = _admin(viewer)
        form = await request.form()
        study = studies.get_study(session, study_id)
        cap = _text(form, "max_participants") or "50"
        if not cap.isdigit() or len(cap) > 7:
            raise UnprocessableInput("a whole number of participants", field="max_participants")
        invite, token = participants.create_invite(
            session,
            admin,
            study,
            label=_text(form, "label"),
            cohort=form.get("cohort") == "true",
            max_participants=int(cap),
        )
        new_invite = {"invite": invite, "url": participants.invite_url(token)}
        return _detail(request, session, admin, study_id, {"new_invite": new_invite})
    except HubError as exc:
        return error_page(request, viewer, exc)


@router.post("/studies/{study_id}/invites/{invite_id}/revoke")
def study_invite_revoke(
    request: Request,
    study_id: DatabaseId,
    invite_id: DatabaseId,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
):
    if viewer is None:
        return login_redirect(request)
    try:
        participants.revoke_invite(session, _admin(viewer), studies.get_study(session, study_id), invite_id)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse(f"/admin/studies/{study_id}", status_code=303)
