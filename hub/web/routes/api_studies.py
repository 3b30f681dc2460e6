"""JSON API of interactive studies: admins create studies (systems, instructions, annotation schema, assistance,
cap), re-upload the schema (a new version), download it as YAML or JSON, open and close the study and make invite
links; a browser joins a study through an invite and becomes a participant (kept in its session cookie)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from hub.errors import NotFound
from hub.services.accounts.rate_limits import client_address
from hub.services.judging.registry import validated
from hub.services.studies import participants, studies
from hub.services.studies import schema as schemas
from hub.web.csrf import csrf_token
from hub.web.deps import DatabaseId, SessionDep
from hub.web.openapi_docs import error_responses, json_body
from hub.web.study_viewer import StudyViewerDep
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["studies"], responses=error_responses(403, 404, 409))


class InviteForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(default="", max_length=200)
    cohort: bool = Field(default=True, description="Each browser a participant (capped), or one person.")
    max_participants: int = Field(default=50, ge=1, le=participants.MAX_MAX_PARTICIPANTS)


class StatusForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["draft", "open", "closed"]
    public: bool | None = Field(default=None, description="Publish the conversations once closed (None: unchanged).")


STUDY_BODY = json_body(studies.StudyForm)
SCHEMA_BODY = json_body(studies.SchemaUpload)
INVITE_BODY = json_body(InviteForm)
STATUS_BODY = json_body(StatusForm)
JsonBody = Annotated[dict[str, Any], Body()]


@router.get("/api/studies")
def list_studies(session: SessionDep, viewer: StudyViewerDep) -> list[dict[str, Any]]:
    """Every study, newest first (admins)."""
    return [studies.study_json(session, s, admin=True) for s in studies.list_studies(session, viewer.user)]


@router.post("/api/studies", status_code=201, openapi_extra=STUDY_BODY)
def create_study(body: JsonBody, session: SessionDep, viewer: StudyViewerDep) -> dict[str, Any]:
    """A new study with its systems and schema version 1; a schema error names the field and the line."""
    study = studies.create_study(session, viewer.user, body)
    return studies.study_json(session, study, admin=True)


def _visible_study(session, viewer, study_id: int):
    """The study for an admin or one of its participants; 404 alike for everyone else."""
    study = session.get(studies.Study, study_id)
    if study is None or not (viewer.is_admin or viewer.participant_in(study_id) is not None):
        raise NotFound(f"no study #{study_id}", field="study_id")
    return study


@router.get("/api/studies/{study_id}")
def get_study(study_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> dict[str, Any]:
    """The study (participants see the instructions, schema and system labels; admins every setting)."""
    study = _visible_study(session, viewer, study_id)
    return studies.study_json(session, study, admin=viewer.is_admin)


@router.get(
    "/api/studies/{study_id}/schema",
    responses={200: {"content": {"text/yaml": {}, "application/json": {}}, "description": "The schema file."}},
)
def download_schema(
    study_id: DatabaseId,
    session: SessionDep,
    viewer: StudyViewerDep,
    format: Annotated[Literal["yaml", "json"], Query(description="File format")] = "yaml",
    version: Annotated[int | None, Query(ge=1, le=1_000_000, description="Default: the current one")] = None,
) -> Response:
    """The annotation schema as a file that PUT /api/studies/{id}/schema takes back."""
    study = _visible_study(session, viewer, study_id)
    row = studies.schema_version(session, study, version)
    media = "application/json" if format == "json" else "text/yaml"
    filename = f"study-{study.id}-schema-v{row.version}.{format}"
    return Response(
        schemas.to_text(row.definition, format),
        media_type=f"{media}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.put("/api/studies/{study_id}/schema", openapi_extra=SCHEMA_BODY)
def upload_schema(study_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep) -> dict:
    """A new version of the schema (`schema` object, or `schema_text` + `schema_format`)."""
    study = studies.get_study(session, study_id) if viewer.is_admin else _visible_study(session, viewer, study_id)
    row = studies.upload_schema(session, viewer.user, study, body)
    return {"study_id": study.id, "version": row.version, "schema": row.definition}


@router.post("/api/studies/{study_id}/status", openapi_extra=STATUS_BODY)
def set_status(study_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep) -> dict:
    """Open (participants may join and chat), close, or put back to draft; publish or not (admins)."""
    study = studies.get_study(session, study_id) if viewer.is_admin else _visible_study(session, viewer, study_id)
    form = validated(StatusForm, body)
    return studies.study_json(
        session, studies.set_status(session, viewer.user, study, form.status, form.public), admin=True
    )


@router.post("/api/studies/{study_id}/invites", status_code=201, openapi_extra=INVITE_BODY)
def create_invite(study_id: DatabaseId, body: JsonBody, session: SessionDep, viewer: StudyViewerDep) -> dict:
    """An invite link (its token is shown once)."""
    study = studies.get_study(session, study_id) if viewer.is_admin else _visible_study(session, viewer, study_id)
    form = validated(InviteForm, body)
    invite, token = participants.create_invite(
        session, viewer.user, study, label=form.label, cohort=form.cohort, max_participants=form.max_participants
    )
    return {**participants.invite_json(invite), "token": token, "url": participants.invite_url(token)}


@router.get("/api/studies/{study_id}/invites")
def list_invites(study_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> list[dict[str, Any]]:
    study = _visible_study(session, viewer, study_id)
    if not viewer.is_admin:
        raise NotFound(f"no study #{study_id}", field="study_id")
    return [participants.invite_json(i) for i in participants.list_invites(session, study)]


@router.post("/api/studies/{study_id}/invites/{invite_id}/revoke")
def revoke_invite(study_id: DatabaseId, invite_id: DatabaseId, session: SessionDep, viewer: StudyViewerDep) -> dict:
    study = studies.get_study(session, study_id) if viewer.is_admin else _visible_study(session, viewer, study_id)
    return participants.invite_json(participants.revoke_invite(session, viewer.user, study, invite_id))


@router.post("/api/study-invites/{token}/join")
def join(
    token: Annotated[str, Path(min_length=1, max_length=100)], request: Request, session: SessionDep
) -> dict[str, Any]:
    """Join the invite's study as this browser: the session cookie then holds the participant, and its later
    state-changing calls send `csrf_token` in the X-CSRF-Token header."""
    participant, study = participants.join(session, request.session, token, client=client_address(request))
    study_data = studies.study_json(session, study, admin=False)
    return {
        "participant": participants.participant_json(participant),
        "study": study_data,
        "csrf_token": csrf_token(request),
    }
