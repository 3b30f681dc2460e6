"""Automatic metric results: one row per submission and metric signature (old versions are kept)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class Score(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("submission_id", "signature", name="uq_score_submission_signature"),)

    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    metric: str = Field(index=True, max_length=120)
    version: str = Field(max_length=40)
    signature: str = Field(max_length=1000)
    corpus: float
    higher_is_better: bool | None = None
    per_prompt: list[float | None] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def of_result(cls, submission_id: int, result: Any) -> Score:
        """The row for one toolkit MetricResult of a submission (the one way scores are stored)."""
        return cls(
            submission_id=submission_id,
            metric=result.metric,
            version=result.version,
            signature=result.signature,
            corpus=result.corpus,
            higher_is_better=result.higher_is_better,
            per_prompt=result.per_prompt,
            details=result.details,
        )
