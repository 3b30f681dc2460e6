"""LLM judging on the hub: registered judges, what a dataset attaches (judges, rubrics, function metrics), the
judging runs of submissions, rubric grades per response and pairwise judge judgements (never mixed with humans')."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class Judge(SQLModel, table=True):
    """An LLM judge behind an OpenAI-compatible endpoint. The key is never stored: `key_ref` names the environment
    variable that holds it on the workers."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=120, unique=True)
    base_url: str = Field(max_length=2_000)
    model: str = Field(max_length=200)
    key_ref: str | None = Field(default=None, max_length=100, description="Environment variable holding the key.")
    template_version: str = Field(default="pairwise-v1", max_length=40)
    temperature: float = 0.0
    max_tokens: int = 512
    concurrency: int = 8
    timeout_s: float = 60.0
    created_at: datetime = Field(default_factory=utcnow)


class DatasetJudging(SQLModel, table=True):
    """One thing attached to a dataset: a judge (pairwise), a rubric (graded by `judge_id`) or a function metric."""

    __table_args__ = (UniqueConstraint("dataset_name", "kind", "label", "judge_id", name="uq_datasetjudging"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_name: str = Field(index=True, max_length=120)
    kind: str = Field(max_length=20, description="judge, rubric or function_metric")
    label: str = Field(max_length=120, description="Rubric id@version, function metric name, or judge id.")
    judge_id: int | None = Field(default=None, foreign_key="judge.id", index=True)
    rubric_yaml: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


class JudgingRun(SQLModel, table=True):
    """One run of a dataset's judging over one submission: its state, progress and what it did."""

    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    status: str = Field(default="queued", max_length=20, index=True, description="queued, running, done, failed")
    progress: float = 0.0
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    error: str | None = Field(default=None, max_length=2_000)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class RubricGrade(SQLModel, table=True):
    """A rubric's verdict on one response: score, PASSED/REDO and the per-criterion grades with explanations."""

    __table_args__ = (
        UniqueConstraint("submission_id", "attachment_id", "signature", "prompt_id", name="uq_rubricgrade"),
    )

    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    attachment_id: int = Field(foreign_key="datasetjudging.id", index=True)
    judge_id: int = Field(foreign_key="judge.id", index=True)
    rubric: str = Field(max_length=200, description="id@version")
    signature: str = Field(max_length=400)
    prompt_id: str = Field(max_length=200)
    score: float | None = None
    status: str | None = Field(default=None, max_length=10, description="PASSED, REDO, or None when not graded")
    criteria: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class JudgeJudgement(SQLModel, table=True):
    """A judge's verdict on one pair, both orders asked: the ratings download's shape, the judge as rater."""

    __table_args__ = (
        UniqueConstraint(
            "judge_id", "dataset_name", "prompt_id", "system_a_id", "system_b_id", name="uq_judgejudgement"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    judge_id: int = Field(foreign_key="judge.id", index=True)
    rater: str = Field(max_length=400, description="The judge's identity: model, template, host.")
    dataset_name: str = Field(index=True, max_length=120)
    dataset_fingerprint: str = Field(max_length=200)
    prompt_id: str = Field(max_length=200)
    system_a_id: int = Field(foreign_key="system.id", index=True)
    system_b_id: int = Field(foreign_key="system.id", index=True)
    item_kind: str = Field(max_length=12, description="pair, or ungraded when an order could not be read")
    outcome: str | None = Field(default=None, max_length=3)
    auto_tie: bool = False
    order_ab: str | None = Field(default=None, max_length=12)
    order_ba: str | None = Field(default=None, max_length=12)
    consistent: bool | None = None
    template: str = Field(max_length=40)
    tokens_a: int = 0
    tokens_b: int = 0
    answer_ab: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    answer_ba: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
