"""Admins create interactive studies: the systems to chat with (OpenAI-compatible endpoints; keys named by an
environment variable, never stored), instructions, the annotation schema (versioned: a re-upload is a new version),
the assistance settings and the participant cap."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlmodel import Session, col, select

from evaluation.llm.config import EndpointConfig
from hub.errors import Forbidden, NotFound, UnprocessableInput
from hub.models import Judge, Study, StudySchema, StudySystem, User
from hub.models.common import utcnow
from hub.services.judging.registry import EndpointForm, endpoint_from, validated
from hub.services.platform import audit
from hub.services.studies import schema as schemas

MAX_SYSTEMS = 10
MAX_INSTRUCTIONS = 20_000
MAX_PROMPT = 20_000
MAX_PARTICIPANTS = 100_000
ARMS = ("unassisted", "assisted", "realtime")


class SystemForm(EndpointForm):
    """One system participants chat with; every field bounded (a 422 names it without echoing its value)."""

    label: str = Field(min_length=1, max_length=120)
    system_prompt: str = Field(default="", max_length=MAX_PROMPT)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=32_768)
    timeout_s: float = Field(default=60.0, ge=1.0, le=600.0)
    history_turns: int = Field(default=20, ge=1, le=200, description="Previous messages sent with each turn.")
    vision: bool = Field(default=False, description="The system accepts images in user turns.")

    @field_validator("label", "model")
    @classmethod
    def _printable(cls, value: str) -> str:
        value = value.strip()
        if not value or not value.isprintable():
            raise ValueError("printable characters only")
        return value


class AssistanceForm(BaseModel):
    """MILO's conditions: no assistance, or a judge's pre-annotations (and drafts) in randomised arms."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["none", "pre_annotation"] = "none"
    judge_id: int | None = Field(default=None, ge=1, le=2**63 - 1)
    randomise: Literal["participant", "conversation"] = "participant"
    arms: list[Literal["unassisted", "assisted", "realtime"]] = Field(
        default_factory=lambda: ["unassisted", "assisted"], min_length=1, max_length=3
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _judge_when_assisted(self) -> AssistanceForm:
        if len(set(self.arms)) != len(self.arms):
            raise ValueError("each arm at most once")
        if self.mode == "pre_annotation" and self.judge_id is None:
            raise ValueError("pre-annotation needs a judge_id")
        return self


class StudyForm(BaseModel):
    """A new study. The schema comes as an object (`schema`) or as text (`schema_text`, `schema_format`)."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=200)
    instructions: str = Field(default="", max_length=MAX_INSTRUCTIONS)
    systems: list[SystemForm] = Field(min_length=1, max_length=MAX_SYSTEMS)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    schema_text: str | None = Field(default=None, max_length=schemas.MAX_SCHEMA_CHARS)
    schema_format: Literal["yaml", "json"] = "yaml"
    assistance: AssistanceForm = Field(default_factory=AssistanceForm)
    max_participants: int = Field(default=50, ge=1, le=MAX_PARTICIPANTS)
    status: Literal["draft", "open", "closed"] = "open"

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("a title is needed")
        return value


class SchemaUpload(BaseModel):
    """A re-uploaded schema: an object, or text in YAML or JSON."""

    model_config = ConfigDict(extra="forbid")

    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    schema_text: str | None = Field(default=None, max_length=schemas.MAX_SCHEMA_CHARS)
    schema_format: Literal["yaml", "json"] = "yaml"


def _admin(user: User | None) -> User:
    if user is None or not user.is_admin:
        raise Forbidden("only admins manage studies")
    return user


def normalised_schema(upload: StudyForm | SchemaUpload) -> tuple[dict[str, Any], str]:
    """The checked schema and the format it came in; 422 naming the field and the line."""
    if upload.schema_text is not None and upload.schema_ is not None:
        raise UnprocessableInput("send the schema as an object or as text, not both", field="schema_text")
    if upload.schema_text is not None:
        return schemas.checked(upload.schema_text, upload.schema_format, field="schema_text"), upload.schema_format
    if upload.schema_ is None:
        raise UnprocessableInput(
            "the study needs an annotation schema (an object, or YAML or JSON text)", field="schema"
        )
    return schemas.checked_object(upload.schema_, field="schema"), "json"


def create_study(session: Session, admin: User | None, form: StudyForm | dict[str, Any]) -> Study:
    """Check everything, then write the study, its systems and schema version 1 in one transaction."""
    admin = _admin(admin)
    if not isinstance(form, StudyForm):
        form = validated(StudyForm, form)
    definition, source_format = normalised_schema(form)
    if form.assistance.judge_id is not None and session.get(Judge, form.assistance.judge_id) is None:
        raise NotFound(f"no judge #{form.assistance.judge_id}", field="assistance.judge_id")
    study = Study(
        title=form.title,
        instructions=form.instructions,
        status=form.status,
        created_by_id=admin.id,
        schema_version=1,
        assistance=form.assistance.model_dump(),
        max_participants=form.max_participants,
    )
    session.add(study)
    session.flush()
    assert study.id is not None
    for system in form.systems:
        session.add(StudySystem(study_id=study.id, **system.model_dump()))
    session.add(
        StudySchema(
            study_id=study.id, version=1, definition=definition, source_format=source_format, created_by_id=admin.id
        )
    )
    session.commit()
    session.refresh(study)
    audit.record(session, actor=admin, action="create_study", target=f"study #{study.id}", detail={"title": form.title})
    return study


def get_study(session: Session, study_id: int) -> Study:
    study = session.get(Study, study_id)
    if study is None:
        raise NotFound(f"no study #{study_id}", field="study_id")
    return study


def list_studies(session: Session, admin: User | None) -> list[Study]:
    _admin(admin)
    return list(session.exec(select(Study).order_by(col(Study.id).desc())))


def systems_of(session: Session, study_id: int) -> list[StudySystem]:
    return list(session.exec(select(StudySystem).where(StudySystem.study_id == study_id).order_by(col(StudySystem.id))))


def schema_version(session: Session, study: Study, version: int | None = None) -> StudySchema:
    """Version `version` of the study's schema (the current one by default)."""
    wanted = study.schema_version if version is None else version
    row = session.exec(
        select(StudySchema).where(StudySchema.study_id == study.id, StudySchema.version == wanted)
    ).first()
    if row is None:
        raise NotFound(f"study #{study.id} has no schema version {wanted}", field="version")
    return row


def upload_schema(session: Session, admin: User | None, study: Study, upload: SchemaUpload | dict) -> StudySchema:
    """A new version of the schema; annotations keep the version they answered."""
    admin = _admin(admin)
    if not isinstance(upload, SchemaUpload):
        upload = validated(SchemaUpload, upload)
    definition, source_format = normalised_schema(upload)
    assert study.id is not None
    row = StudySchema(
        study_id=study.id,
        version=study.schema_version + 1,
        definition=definition,
        source_format=source_format,
        created_by_id=admin.id,
    )
    study.schema_version = row.version
    study.updated_at = utcnow()
    session.add(row)
    session.add(study)
    session.commit()
    session.refresh(row)
    audit.record(
        session, actor=admin, action="upload_study_schema", target=f"study #{study.id}", detail={"version": row.version}
    )
    return row


def set_status(session: Session, admin: User | None, study: Study, status: str, public: bool | None = None) -> Study:
    """Open (participants may join and chat), close, or back to draft; `public`: the admin publishes the study's
    conversations and annotations (downloads and exports show them once it is also closed)."""
    admin = _admin(admin)
    if status not in ("draft", "open", "closed"):
        raise UnprocessableInput("status is draft, open or closed", field="status")
    study.status, study.updated_at = status, utcnow()
    if public is not None:
        study.public = public
    session.add(study)
    session.commit()
    session.refresh(study)
    audit.record(
        session,
        actor=admin,
        action="study_status",
        target=f"study #{study.id}",
        detail={"status": status, "public": study.public},
    )
    return study


def endpoint_config(system: StudySystem) -> EndpointConfig:
    """The system's endpoint with its key read from the environment now (an unset reference is named, never a key)."""
    return endpoint_from(system, who=f"system {system.label!r}", where="on the hub", max_retries=0)


def system_json(system: StudySystem, *, admin: bool) -> dict[str, Any]:
    """Participants see the label, id and whether it takes images; admins every setting (the key's name, not key)."""
    data: dict[str, Any] = {"id": system.id, "label": system.label, "vision": system.vision}
    if admin:
        data.update(
            base_url=system.base_url,
            model=system.model,
            key_ref=system.key_ref,
            key_set=bool(system.key_ref and os.environ.get(system.key_ref)),
            system_prompt=system.system_prompt,
            temperature=system.temperature,
            max_tokens=system.max_tokens,
            timeout_s=system.timeout_s,
            history_turns=system.history_turns,
        )
    return data


def study_json(session: Session, study: Study, *, admin: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": study.id,
        "title": study.title,
        "instructions": study.instructions,
        "status": study.status,
        "schema_version": study.schema_version,
        "schema": schema_version(session, study).definition,
        "systems": [system_json(s, admin=admin) for s in systems_of(session, study.id or 0)],
    }
    if admin:
        data.update(
            assistance=study.assistance,
            max_participants=study.max_participants,
            participant_count=study.participant_count,
            public=study.public,
            created_at=study.created_at.isoformat(),
            updated_at=study.updated_at.isoformat(),
        )
    return data
