"""Evaluated systems: baselines shipped by the hub and systems researchers submit."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class System(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, max_length=120)
    description: str = Field(default="", max_length=10_000)
    paper_url: str | None = Field(default=None, max_length=2048)
    code_url: str | None = Field(default=None, max_length=2048)
    weights_url: str | None = Field(default=None, max_length=2048)
    owner_id: int | None = Field(default=None, foreign_key="user.id", index=True)
    is_baseline: bool = False
    is_public: bool = Field(default=False, description="Owner opted in to publishing once approved.")
    created_at: datetime = Field(default_factory=utcnow)
