"""Pairwise human evaluations: an experiment of system A vs system B, the pairs it shows and the tasks (blocks)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow


class ExperimentStatus(StrEnum):
    draft = "draft"  # created, cost shown, nothing released to raters yet
    open = "open"  # tasks are handed out
    closed = "closed"  # no more ratings accepted


class Backend(StrEnum):
    hub = "hub"  # the hub's own rating pages, invite links
    mturk = "mturk"  # Amazon Mechanical Turk, ExternalQuestion HITs pointing at the same pages
    imported = "import"  # judgements loaded from another system (the original ChatEval)


class TieMode(StrEnum):
    single = "single"  # three choices: left, tie, right
    split = "split"  # four: left, both good, both bad, right (both ties count as a tie)


class ItemKind(StrEnum):
    pair = "pair"  # a real judgement of system A vs B
    attention = "attention"  # a real response against a degraded one; the real one should win
    repeat = "repeat"  # a pair shown a second time in the same task (self-consistency)
    known_answer = "known_answer"  # an admin-supplied pair with a known better response


class Experiment(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    title: str = Field(default="", max_length=200)
    dataset_name: str = Field(index=True, max_length=120)
    dataset_fingerprint: str = Field(max_length=200)
    system_a_id: int = Field(foreign_key="system.id", index=True)
    system_b_id: int = Field(foreign_key="system.id", index=True)
    submission_id: int | None = Field(default=None, foreign_key="submission.id", index=True)
    backend: Backend = Backend.hub
    tie_mode: TieMode = TieMode.single
    raters_per_prompt: int = 3
    prompts_per_task: int = 10
    reward_microusd: int = Field(default=10_000, description="Reward per judgement in millionths of a dollar.")
    fee_percent: int = Field(default=20, description="Crowd platform fee on top of the rewards.")
    attention_checks_per_task: int = 1
    repeats_per_task: int = 1
    task_timeout_minutes: int = 30
    seed: int = 0
    prompt_ids: list[str] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False), description="Subset shown; empty = all."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False), description="Backend options (MTurk HIT setup)."
    )
    status: ExperimentStatus = Field(default=ExperimentStatus.draft, index=True)
    released_tasks: int | None = Field(
        default=None, description="Tasks open to raters, by index; None = all. Adaptive experiments release rounds."
    )
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = Field(default_factory=utcnow)
    launched_at: datetime | None = None
    closed_at: datetime | None = None


class Task(SQLModel, table=True):
    """A block of items for one rater; handed to at most `slots` raters at a time (`claimed` counts them)."""

    __table_args__ = (UniqueConstraint("experiment_id", "index", name="uq_task_experiment_index"),)

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    index: int
    slots: int
    claimed: int = 0
    completed: int = 0
    external_id: str | None = Field(default=None, max_length=200, index=True, description="MTurk HIT id.")


class ExperimentItem(SQLModel, table=True):
    """One pair as raters see it (a snapshot of context and both responses), or an automatic tie (never shown)."""

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int = Field(foreign_key="experiment.id", index=True)
    task_id: int | None = Field(default=None, foreign_key="task.id", index=True)
    position: int = 0
    prompt_id: str = Field(max_length=200)
    kind: ItemKind = ItemKind.pair
    auto_tie: bool = False
    left_is_a: bool | None = None
    context: list[dict[str, str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    left_text: str = ""
    right_text: str = ""
    expected: str | None = Field(default=None, max_length=1, description="'A' or 'B' for check items.")
    repeat_of_id: int | None = Field(default=None, foreign_key="experimentitem.id")
    note: str = Field(default="", max_length=200, description="How a check item was built (e.g. 'shuffled').")
