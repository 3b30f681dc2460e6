"""Conversation sets: a researcher's uploaded conversation log, the function metrics' values of each of its turns
and conversations, and their aggregates per system label and role."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow

SET_STATUSES = ("queued", "evaluating", "evaluated", "failed")
REVIEW_STATES = ("pending", "approved", "rejected")


class ConversationSet(SQLModel, table=True):
    """One uploaded `{"messages": [...]}` JSONL file. Its owner and admins see it at once; everyone else only when
    the owner asked for it to be public and an admin approved it (`review`)."""

    __tablename__ = "conversationset"

    id: int | None = Field(default=None, primary_key=True)
    owner_id: int = Field(foreign_key="user.id", index=True)
    name: str = Field(max_length=120, description="A label; the set is identified by its id.")
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    is_public: bool = Field(default=False, description="The owner asks for it to be public (after approval).")
    review: str = Field(default="pending", max_length=12, index=True, description="pending, approved or rejected")
    review_reason: str | None = Field(default=None, max_length=5_000)
    dataset_name: str | None = Field(
        default=None, max_length=120, description="A dataset whose attached rubrics also grade the assistant turns."
    )
    filename: str = Field(max_length=255)
    file_sha256: str = Field(max_length=64, index=True)
    conversations: int = 0
    status: str = Field(
        default="queued", max_length=12, index=True, description="queued, evaluating, evaluated, failed"
    )
    progress: float = 0.0
    attempts: int = Field(default=0, description="Evaluation runs started; the latest run alone may write results.")
    error: str | None = Field(default=None, max_length=10_000)
    metrics: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    toolkit_version: str | None = Field(default=None, max_length=40)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    evaluated_at: datetime | None = None


class ConversationScore(SQLModel, table=True):
    """The values of one scored turn (`turn` is its index in the conversation) or of a whole conversation (`turn`
    None, `role` None), in the `chateval evaluate --conversations --json` record shape."""

    __tablename__ = "conversationscore"
    __table_args__ = (Index("ix_conversationscore_set_conversation", "set_id", "conversation"),)

    id: int | None = Field(default=None, primary_key=True)
    set_id: int = Field(foreign_key="conversationset.id", index=True)
    position: int = Field(description="The conversation's place in the file (0-based).")
    conversation: str = Field(max_length=200, description="The conversation's id (a label from the file).")
    system: str | None = Field(default=None, max_length=200, description="The system label from the file.")
    line: int
    turn: int | None = None
    role: str | None = Field(default=None, max_length=12)
    values: dict[str, float] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    skipped: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class ConversationAggregate(SQLModel, table=True):
    """n, mean, sd, min and max of one value over a set's turns of one role (role None: whole conversations) and
    one system label."""

    __tablename__ = "conversationaggregate"

    id: int | None = Field(default=None, primary_key=True)
    set_id: int = Field(foreign_key="conversationset.id", index=True)
    system: str | None = Field(default=None, max_length=200)
    role: str | None = Field(default=None, max_length=12)
    metric: str = Field(max_length=200)
    n: int
    mean: float
    sd: float | None = None
    min: float
    max: float
