"""Admins register judges (endpoint, model, key reference, template version, sampling) and attach judges, rubrics
and function metrics to datasets. Keys are never stored: a judge names the environment variable holding its key,
and only the workers read it (`endpoint_config`)."""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from sqlmodel import Session, col, select

from evaluation.errors import EvaluationError
from evaluation.function_metrics.registry import function_metrics
from evaluation.judges.templates import TEMPLATES
from evaluation.llm.config import EndpointConfig
from evaluation.rubrics import Rubric, parse_rubric
from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import DatasetJudging, Judge, User
from hub.services.platform import audit
from hub.services.platform.datasets import installed_dataset

KEY_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
MAX_RUBRIC_CHARS = 64 * 1024
KINDS = ("judge", "rubric", "function_metric")


class EndpointForm(BaseModel):
    """An OpenAI-compatible endpoint as admins give it (a judge, a study's system): the URL without credentials and
    the NAME of the environment variable holding the key, never the key; every field bounded (a 422 names it)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(min_length=1, max_length=2_000, description="OpenAI-compatible, up to and including /v1.")
    model: str = Field(min_length=1, max_length=200)
    key_ref: str | None = Field(
        default=None, max_length=100, description="Name of the environment variable holding the key (never the key)."
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or not value.isprintable() or "@" in value:
            raise ValueError("an http(s) URL without credentials")
        return value.rstrip("/")

    @field_validator("key_ref")
    @classmethod
    def _key_ref(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not KEY_REF.match(value):
            raise ValueError("the NAME of an environment variable (letters, digits, _), never the key itself")
        return value


class JudgeForm(EndpointForm):
    """What an admin registers; every field bounded (a 422 names the field)."""

    name: str = Field(min_length=1, max_length=120)
    template_version: str = Field(default="pairwise-v1", max_length=40)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=32_768)
    concurrency: int = Field(default=8, ge=1, le=64)
    timeout_s: float = Field(default=60.0, ge=1.0, le=600.0)

    @field_validator("name", "model")
    @classmethod
    def _printable(cls, value: str) -> str:
        value = value.strip()
        if not value or not value.isprintable() or "|" in value:
            raise ValueError("printable characters only, no '|'")
        return value

    @field_validator("template_version")
    @classmethod
    def _template(cls, value: str) -> str:
        if value not in TEMPLATES:
            raise ValueError(f"unknown template (known: {', '.join(sorted(TEMPLATES))})")
        return value


class AttachForm(BaseModel):
    """Attach a judge (pairwise), a rubric (YAML text, graded by `judge_id`) or a function metric to a dataset."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["judge", "rubric", "function_metric"]
    judge_id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    rubric_yaml: str | None = Field(default=None, max_length=MAX_RUBRIC_CHARS)
    metric: str | None = Field(default=None, max_length=120)


def validated(form: type[BaseModel], data: Any) -> Any:
    """`data` checked against `form`; a 422 names the first bad field and never echoes its value (it may be a key
    pasted in the wrong place)."""
    try:
        return form.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or "body"
        raise UnprocessableInput(first["msg"], field=field) from None


def _admin(user: User) -> None:
    if not user.is_admin:
        raise Forbidden("only admins can manage judges")


def judge_json(judge: Judge) -> dict[str, Any]:
    """A judge as admins and pages see it: the key reference's name and whether it is set, never the key."""
    return {
        "id": judge.id,
        "name": judge.name,
        "base_url": judge.base_url,
        "model": judge.model,
        "key_ref": judge.key_ref,
        "key_set": bool(judge.key_ref and os.environ.get(judge.key_ref)),
        "template_version": judge.template_version,
        "temperature": judge.temperature,
        "max_tokens": judge.max_tokens,
        "concurrency": judge.concurrency,
        "timeout_s": judge.timeout_s,
        "created_at": judge.created_at.isoformat(),
    }


def register_judge(session: Session, admin: User, form: JudgeForm) -> Judge:
    _admin(admin)
    if session.exec(select(Judge).where(Judge.name == form.name)).first() is not None:
        raise Conflict(f"a judge named {form.name!r} exists", field="name")
    judge = Judge(**form.model_dump())
    session.add(judge)
    session.commit()
    session.refresh(judge)
    audit.record(session, actor=admin, action="register_judge", target=f"judge #{judge.id}", detail=judge_json(judge))
    return judge


def list_judges(session: Session) -> list[Judge]:
    return list(session.exec(select(Judge).order_by(col(Judge.id))))


def get_judge(session: Session, judge_id: int) -> Judge:
    judge = session.get(Judge, judge_id)
    if judge is None:
        raise NotFound(f"no judge #{judge_id}", field="judge_id")
    return judge


def endpoint_from(row: Any, *, who: str, where: str, **settings: Any) -> EndpointConfig:
    """A stored endpoint (a judge, a study's system) with its key read from the environment now; an unset reference is
    named ("`who`: key reference NAME is not set `where`"), never a key. `settings` add to or override the row's."""
    key = None
    if row.key_ref:
        key = os.environ.get(row.key_ref)
        if not key:
            raise UnprocessableInput(f"{who}: key reference {row.key_ref} is not set {where}")
    return EndpointConfig(
        base_url=row.base_url,
        model=row.model,
        api_key=SecretStr(key) if key else None,
        temperature=row.temperature,
        max_tokens=row.max_tokens,
        timeout_s=row.timeout_s,
        **settings,
    )


def endpoint_config(judge: Judge) -> EndpointConfig:
    """The judge's endpoint with its key read from the environment now; an unset reference is named, never a key."""
    return endpoint_from(judge, who=f"judge {judge.name!r}", where="on this worker", concurrency=judge.concurrency)


def response_metrics() -> list[str]:
    """Function metric values that score a single response (per assistant turn), by name."""
    names: list[str] = []
    for spec in function_metrics().values():
        if spec.over == "turn" and "assistant" in spec.roles:
            names.extend(spec.value_names)
    return sorted(set(names))


def parse_attached_rubric(text: str) -> Rubric:
    try:
        return parse_rubric(text, name="rubric_yaml")
    except EvaluationError as exc:
        raise UnprocessableInput(exc.describe(), field="rubric_yaml") from None


def attach(session: Session, admin: User, dataset: str, form: AttachForm) -> DatasetJudging:
    _admin(admin)
    installed_dataset(dataset)  # 404 for an unknown dataset
    rubric_yaml = None
    if form.kind in ("judge", "rubric"):
        if form.judge_id is None:
            raise UnprocessableInput(f"a {form.kind} needs a judge to grade it: choose one", field="judge_id")
        get_judge(session, form.judge_id)
    if form.kind == "judge":
        label = str(form.judge_id)
    elif form.kind == "rubric":
        if not form.rubric_yaml:
            raise UnprocessableInput("a rubric needs its YAML text", field="rubric_yaml")
        rubric = parse_attached_rubric(form.rubric_yaml)
        label, rubric_yaml = f"{rubric.id}@{rubric.version}", form.rubric_yaml
    else:
        known = response_metrics()
        if form.metric not in known:
            raise UnprocessableInput(
                f"unknown function metric {form.metric!r} (known: {', '.join(known)})", field="metric"
            )
        label = form.metric
    judge_id = form.judge_id if form.kind != "function_metric" else None
    existing = session.exec(
        select(DatasetJudging).where(
            DatasetJudging.dataset_name == dataset,
            DatasetJudging.kind == form.kind,
            DatasetJudging.label == label,
            DatasetJudging.judge_id == judge_id if judge_id is not None else col(DatasetJudging.judge_id).is_(None),
        )
    ).first()
    if existing is not None:
        raise Conflict(f"{form.kind} {label} is already attached to {dataset}", field="kind")
    attachment = DatasetJudging(
        dataset_name=dataset, kind=form.kind, label=label, judge_id=judge_id, rubric_yaml=rubric_yaml
    )
    session.add(attachment)
    session.commit()
    session.refresh(attachment)
    audit.record(
        session,
        actor=admin,
        action="attach_judging",
        target=f"dataset {dataset}",
        detail={"attachment": attachment.id, "kind": form.kind, "label": label, "judge_id": judge_id},
    )
    return attachment


def attachments(session: Session, dataset: str | None = None) -> list[DatasetJudging]:
    query = select(DatasetJudging).order_by(col(DatasetJudging.id))
    if dataset is not None:
        query = query.where(DatasetJudging.dataset_name == dataset)
    return list(session.exec(query))


def attachment_json(attachment: DatasetJudging) -> dict[str, Any]:
    return {
        "id": attachment.id,
        "dataset": attachment.dataset_name,
        "kind": attachment.kind,
        "label": attachment.label,
        "judge_id": attachment.judge_id,
        "created_at": attachment.created_at.isoformat(),
    }
