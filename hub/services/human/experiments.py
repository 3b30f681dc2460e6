"""Pairwise human evaluations: create (validate, snapshot, store the seed), estimate cost, launch, close.

Creation is one transaction: hub.services.human.experiment_items builds every item and task from one seeded random
generator, and the seed is stored with the experiment, so the same form and seed rebuild the same experiment.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from sqlmodel import Session, col, select

from evaluation.dataset import Dataset
from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import (
    Backend,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    ItemKind,
    Submission,
    SubmissionStatus,
    System,
    TieMode,
    User,
)
from hub.models.common import utcnow
from hub.services.human.experiment_items import KnownAnswer, build_items
from hub.services.platform import audit
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions.results import RESULT_STATUSES, read_responses
from hub.storage import Storage

MICRO = 1_000_000
MAX_ID = 2**63 - 1  # the largest row id a 64-bit column holds
# Submissions whose responses may be judged: validated and approved by an admin (scores need not be final).
JUDGEABLE = (SubmissionStatus.approved, SubmissionStatus.evaluating, *RESULT_STATUSES)


class AdaptiveOptions(BaseModel):
    """How an adaptive experiment releases its tasks and when it stops."""

    round_tasks: int = Field(default=2, ge=1, le=10_000, description="Tasks released per round.")
    alpha: float = Field(default=0.05, gt=0, le=0.2, description="Error rate of the sequential test.")
    budget_judgements: int | None = Field(
        default=None, ge=1, description="Stop after this many judgements of real pairs, decided or not."
    )


class ExperimentForm(BaseModel):
    """What an admin (or the pipeline) chooses for a new experiment; defaults follow the ChatEval protocol."""

    dataset: str = Field(min_length=1, max_length=120)
    system_a_id: int = Field(ge=1, le=MAX_ID)
    system_b_id: int = Field(ge=1, le=MAX_ID)
    title: str = Field(default="", max_length=200)
    backend: Literal[Backend.hub, Backend.mturk] = Field(
        default=Backend.hub, description="hub (the hub's rating pages) or mturk; imported judgements come from the CLI"
    )
    tie_mode: TieMode = TieMode.single
    raters_per_prompt: int = Field(default=3, ge=1, le=50)
    prompts_per_task: int = Field(default=10, ge=1, le=100)
    reward_usd: float = Field(default=0.01, ge=0, le=100, description="Reward per judgement of a real pair.")
    fee_percent: int = Field(default=20, ge=0, le=100)
    attention_checks_per_task: int = Field(default=1, ge=0, le=10)
    repeats_per_task: int = Field(default=1, ge=0, le=10)
    task_timeout_minutes: int = Field(default=30, ge=1, le=24 * 60)
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)
    prompt_ids: list[str] = Field(default_factory=list, max_length=100_000)
    most_informative: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Judge only this many prompts: those with the most expected information about the comparison "
        "in the dataset's newest IRT fit (instead of prompt_ids).",
    )
    known_answers: list[KnownAnswer] = Field(default_factory=list, max_length=1_000)
    adaptive: AdaptiveOptions | None = Field(
        default=None, description="Release tasks in rounds and stop once a sequential test decides (hub raters)."
    )
    submission_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    mturk: dict[str, Any] = Field(default_factory=dict, description="HIT options; see hub.services.human.mturk.")
    reasons: Literal["off", "optional", "required"] = Field(
        default="off", description="Ask raters for a short free-text reason with each judgement (private to admins)."
    )

    @field_validator("backend", mode="before")
    @classmethod
    def _launchable(cls, value: Any) -> Any:
        if value in (Backend.imported, Backend.imported.value):
            raise ValueError("'import' is for judgements loaded with `chateval ratings import-chateval`")
        return value

    @model_validator(mode="after")
    def _adaptive_on_hub_pages(self) -> ExperimentForm:
        if self.adaptive is not None and self.backend != Backend.hub:
            raise ValueError("adaptive experiments release tasks in rounds on the hub's own rating pages only")
        return self


@dataclass(frozen=True)
class CostEstimate:
    shown_prompts: int
    auto_ties: int
    judgements: int
    check_judgements: int
    rewards_usd: float
    fee_usd: float
    total_usd: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def cost_estimate(
    shown_prompts: int,
    *,
    raters: int,
    reward_microusd: int,
    fee_percent: int,
    checks_per_task: int,
    prompts_per_task: int,
    auto_ties: int = 0,
) -> CostEstimate:
    """Rewards are paid per judgement of a real pair (a task of 10 pairs pays 10 rewards); quality checks ride along
    unpaid, so 200 prompts x 3 raters at $0.01 + 20% = 600 judgements = $7.20."""
    judgements = shown_prompts * raters
    tasks = -(-shown_prompts // prompts_per_task) if shown_prompts else 0
    rewards = judgements * reward_microusd
    fee = rewards * fee_percent // 100
    return CostEstimate(
        shown_prompts=shown_prompts,
        auto_ties=auto_ties,
        judgements=judgements,
        check_judgements=tasks * checks_per_task * raters,
        rewards_usd=rewards / MICRO,
        fee_usd=fee / MICRO,
        total_usd=(rewards + fee) / MICRO,
    )


def experiment_cost(session: Session, experiment: Experiment) -> CostEstimate:
    items = session.exec(select(ExperimentItem).where(ExperimentItem.experiment_id == experiment.id)).all()
    shown = sum(1 for i in items if i.kind == ItemKind.pair and not i.auto_tie)
    return cost_estimate(
        shown,
        raters=experiment.raters_per_prompt,
        reward_microusd=experiment.reward_microusd,
        fee_percent=experiment.fee_percent,
        checks_per_task=experiment.attention_checks_per_task + experiment.repeats_per_task,
        prompts_per_task=experiment.prompts_per_task,
        auto_ties=sum(1 for i in items if i.auto_tie),
    )


def judged_submission(
    session: Session, system: System, dataset: Dataset, submission_id: int | None = None, *, field: str = "system_a_id"
) -> Submission:
    """The submission whose responses stand for `system` on `dataset`: the given one, else the latest judgeable."""
    query = select(Submission).where(
        Submission.system_id == system.id,
        Submission.dataset_name == dataset.manifest.name,
        col(Submission.status).in_(JUDGEABLE),
    )
    if submission_id is not None:
        query = query.where(Submission.id == submission_id)
    submission = session.exec(query.order_by(col(Submission.id).desc())).first()
    if submission is None:
        raise UnprocessableInput(
            f"system #{system.id} ({system.name}) has no approved responses for {dataset.manifest.name}",
            field=field if submission_id is None else "submission_id",
        )
    if submission.dataset_fingerprint != dataset.fingerprint:
        raise UnprocessableInput(
            f"system #{system.id} was submitted against another release of {dataset.manifest.name}", field="dataset"
        )
    return submission


def _systems(session: Session, form: ExperimentForm) -> tuple[System, System]:
    if form.system_a_id == form.system_b_id:
        raise UnprocessableInput("system A and system B must differ", field="system_b_id")
    found = []
    for field in ("system_a_id", "system_b_id"):
        system = session.get(System, getattr(form, field))
        if system is None:
            raise UnprocessableInput(f"no system #{getattr(form, field)}", field=field)
        found.append(system)
    return found[0], found[1]


def _chosen_prompts(dataset: Dataset, prompt_ids: list[str]) -> list[int]:
    if not prompt_ids:
        return list(range(len(dataset)))
    index = {pid: i for i, pid in enumerate(dataset.prompt_ids)}
    unknown = [pid for pid in prompt_ids if pid not in index]
    if unknown:
        raise UnprocessableInput(
            f"{len(unknown)} prompt id(s) not in the dataset, first {unknown[0]!r}", field="prompt_ids"
        )
    return sorted({index[pid] for pid in prompt_ids})


def _adaptive_priority(
    session: Session, dataset: Dataset, system_a: System, system_b: System
) -> tuple[dict[int, float] | None, str]:
    """For an adaptive experiment: the expected information of each prompt in the dataset's newest IRT fit, so the
    first rounds judge the prompts that tell the most; random order while the dataset has no fit."""
    from hub.services.statistics.irt_plan import plan

    ranked = plan(session, dataset.manifest.name, system_a.id, system_b.id)
    if ranked["fit_id"] is None:
        return None, "random (no IRT fit of the dataset yet)"
    index = {pid: i for i, pid in enumerate(dataset.prompt_ids)}
    return {index[row["prompt_id"]]: row["information"] for row in ranked["prompts"]}, (
        f"expected information first (IRT fit #{ranked['fit_id']})"
    )


def create_experiment(session: Session, actor: User | None, form: ExperimentForm, storage: Storage) -> Experiment:
    """A draft experiment with every item and task built (nothing shown to raters until launch)."""
    if actor is not None and not actor.is_admin:
        raise Forbidden("only admins create experiments")
    dataset = installed_dataset(form.dataset)
    system_a, system_b = _systems(session, form)
    responses_a = read_responses(storage, judged_submission(session, system_a, dataset, form.submission_id), dataset)
    responses_b = read_responses(storage, judged_submission(session, system_b, dataset, field="system_b_id"), dataset)
    for known in form.known_answers:
        if known.prompt_id not in set(dataset.prompt_ids):
            raise UnprocessableInput(f"known answer for unknown prompt {known.prompt_id!r}", field="known_answers")
    if form.backend == Backend.mturk:
        from hub.services.human.mturk.client import MTurkOptions

        try:
            MTurkOptions.model_validate(form.mturk)
        except ValueError as exc:
            raise UnprocessableInput(f"Mechanical Turk options: {exc}", field="mturk") from None
    settings: dict[str, Any] = {"mturk": form.mturk} if form.mturk else {}
    if form.reasons != "off":
        settings["reasons"] = form.reasons
    priority = None
    if form.adaptive is not None:
        priority, order = _adaptive_priority(session, dataset, system_a, system_b)
        settings["adaptive"] = {"options": form.adaptive.model_dump(), "order": order}
    if form.most_informative is not None:
        if form.prompt_ids:
            raise UnprocessableInput(
                "give either the prompt ids or a number of most informative prompts, not both", field="most_informative"
            )
        from hub.services.statistics.irt_plan import most_informative

        chosen, settings["prompt_selection"] = most_informative(
            session, dataset.manifest.name, system_a.id, system_b.id, form.most_informative
        )
        form = form.model_copy(update={"prompt_ids": chosen})
    seed = form.seed if form.seed is not None else secrets.randbelow(2**31)
    experiment = Experiment(
        title=form.title or f"{system_a.name} vs {system_b.name} on {dataset.manifest.name}",
        dataset_name=dataset.manifest.name,
        dataset_fingerprint=dataset.fingerprint,
        system_a_id=system_a.id,
        system_b_id=system_b.id,
        submission_id=form.submission_id,
        backend=form.backend,
        tie_mode=form.tie_mode,
        raters_per_prompt=form.raters_per_prompt,
        prompts_per_task=form.prompts_per_task,
        reward_microusd=round(form.reward_usd * MICRO),
        fee_percent=form.fee_percent,
        attention_checks_per_task=form.attention_checks_per_task,
        repeats_per_task=form.repeats_per_task,
        task_timeout_minutes=form.task_timeout_minutes,
        seed=seed,
        prompt_ids=list(form.prompt_ids),
        settings=settings,
        released_tasks=form.adaptive.round_tasks if form.adaptive else None,
        created_by_id=actor.id if actor else None,
    )
    shown = _chosen_prompts(dataset, form.prompt_ids)  # refuses unknown ids before anything is written
    try:
        session.add(experiment)
        session.flush()
        build_items(
            session,
            experiment,
            dataset,
            shown,
            responses_a,
            responses_b,
            form.known_answers,
            random.Random(seed),
            priority=priority,
        )
        session.commit()
    except Exception:
        session.rollback()  # all or nothing: no half-built experiment
        raise
    audit.record(
        session,
        actor=actor,
        action="create_experiment",
        target=f"experiment #{experiment.id}",
        detail={"systems": [system_a.id, system_b.id], "dataset": dataset.manifest.name, "seed": seed},
    )
    session.refresh(experiment)
    return experiment


# --- lifecycle ---------------------------------------------------------------------------------------------


def admin_experiment(session: Session, admin: User, experiment_id: int) -> Experiment:
    if not admin.is_admin:
        raise Forbidden("only admins manage experiments")
    experiment = session.get(Experiment, experiment_id)
    if experiment is None:
        raise NotFound(f"no experiment #{experiment_id}")
    return experiment


def launch(session: Session, admin: User, experiment_id: int, *, backend_launch=None) -> Experiment:
    """Open a draft to raters. `backend_launch(session, experiment)` runs first (MTurk: balance check, HITs)."""
    experiment = admin_experiment(session, admin, experiment_id)
    if experiment.status != ExperimentStatus.draft:
        raise Conflict(f"experiment #{experiment_id} is {experiment.status}, not a draft")
    if backend_launch is not None:
        backend_launch(session, experiment)
    experiment.status, experiment.launched_at = ExperimentStatus.open, utcnow()
    session.add(experiment)
    session.commit()
    audit.record(session, actor=admin, action="launch_experiment", target=f"experiment #{experiment.id}")
    session.refresh(experiment)
    return experiment
