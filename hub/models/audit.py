"""The audit log: every admin action, who did it, to what, and when."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class AuditEntry(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    actor_id: int | None = Field(default=None, foreign_key="user.id", index=True)
    action: str = Field(index=True, max_length=80)
    target: str = Field(max_length=200)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, index=True)
