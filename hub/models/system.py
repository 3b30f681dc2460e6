"""Evaluated systems: baselines shipped by the hub and systems researchers submit."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import event
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow
from hub.system_names import name_key


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
    # hub.system_names.name_key(name) while the system is public or a baseline, else NULL: unique, so no two public
    # systems have names that look alike, and a private system's name never blocks (or reveals) anything.
    public_name_key: str | None = Field(default=None, max_length=64, unique=True, index=True)


def public_name_key(system: System) -> str | None:
    return name_key(system.name) if system.is_public or system.is_baseline else None


@event.listens_for(System, "before_insert")
@event.listens_for(System, "before_update")
def _keep_public_name_key(_mapper, _connection, system: System) -> None:
    """Every insert and update through the ORM stores the key; the unique index refuses a clash, even a racing one."""
    system.public_name_key = public_name_key(system)
