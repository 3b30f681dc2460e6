"""Published IRT fits: one row per fit of a dataset's public judgements; the newest is shown, older ones kept."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class IrtFit(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    dataset_name: str = Field(index=True, max_length=120)
    judgements_digest: str = Field(max_length=64, description="sha256 of the judgements fitted (refit on change).")
    n_judgements: int
    signature: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
