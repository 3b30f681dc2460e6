"""Pairwise human evaluations: create (items, automatic ties, checks, tasks), estimate cost, launch, close.

Creation is one transaction: every item the raters will see is a snapshot (context and both responses), so later
changes to a submission or a dataset cannot change what was judged. The order of prompts, the blocks, the
left/right side of every pair and where the quality checks sit in each block all come from one seeded random
generator, and the seed is stored with the experiment.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from typing import Any

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
    Rating,
    Submission,
    SubmissionStatus,
    System,
    Task,
    TieMode,
    User,
)
from hub.models.common import utcnow
from hub.services import audit
from hub.services.adaptive import AdaptiveOptions
from hub.services.check_items import degrade
from hub.services.datasets import installed_dataset
from hub.services.leaderboard import RESULT_STATUSES, read_responses
from hub.storage import Storage

MICRO = 1_000_000
# Submissions whose responses may be judged: validated and approved by an admin (scores need not be final).
JUDGEABLE = (SubmissionStatus.approved, SubmissionStatus.evaluating, *RESULT_STATUSES)


class KnownAnswer(BaseModel):
    """An admin-supplied check pair: for this prompt, `better` is the response a careful rater prefers."""

    prompt_id: str = Field(min_length=1, max_length=200)
    better: str = Field(min_length=1, max_length=10_000)
    worse: str = Field(min_length=1, max_length=10_000)


class ExperimentForm(BaseModel):
    """What an admin (or the pipeline) chooses for a new experiment; defaults follow the ChatEval protocol."""

    dataset: str = Field(min_length=1, max_length=120)
    system_a_id: int = Field(ge=1)
    system_b_id: int = Field(ge=1)
    title: str = Field(default="", max_length=200)
    backend: Backend = Backend.hub
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
    submission_id: int | None = None
    mturk: dict[str, Any] = Field(default_factory=dict, description="HIT options; see hub.services.mturk.")

    @field_validator("backend")
    @classmethod
    def _launchable(cls, value: Backend) -> Backend:
        if value == Backend.imported:
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


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def judged_submission(
    session: Session, system: System, dataset: Dataset, submission_id: int | None = None
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
            field="system_a_id" if submission_id is None else "submission_id",
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


def create_experiment(session: Session, actor: User | None, form: ExperimentForm, storage: Storage) -> Experiment:
    """A draft experiment with every item and task built (nothing shown to raters until launch)."""
    if actor is not None and not actor.is_admin:
        raise Forbidden("only admins create experiments")
    dataset = installed_dataset(form.dataset)
    system_a, system_b = _systems(session, form)
    responses_a = read_responses(storage, judged_submission(session, system_a, dataset, form.submission_id), dataset)
    responses_b = read_responses(storage, judged_submission(session, system_b, dataset), dataset)
    for known in form.known_answers:
        if known.prompt_id not in set(dataset.prompt_ids):
            raise UnprocessableInput(f"known answer for unknown prompt {known.prompt_id!r}", field="known_answers")
    if form.backend == Backend.mturk:
        from hub.services.mturk import MTurkOptions

        try:
            MTurkOptions.model_validate(form.mturk)
        except ValueError as exc:
            raise UnprocessableInput(f"Mechanical Turk options: {exc}", field="mturk") from None
    settings: dict[str, Any] = {"mturk": form.mturk} if form.mturk else {}
    if form.adaptive is not None:
        settings["adaptive"] = {"options": form.adaptive.model_dump()}
    if form.most_informative is not None:
        if form.prompt_ids:
            raise UnprocessableInput("give prompt_ids or most_informative, not both", field="most_informative")
        from hub.services.irt_plan import most_informative

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
        _build_items(
            session, experiment, dataset, shown, responses_a, responses_b, form.known_answers, random.Random(seed)
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


def _context(dataset: Dataset, index: int) -> list[dict[str, str]]:
    return [{"role": turn.role, "content": turn.content} for turn in dataset.prompts[index].context]


def _build_items(
    session: Session,
    experiment: Experiment,
    dataset: Dataset,
    chosen: list[int],
    responses_a: list[str],
    responses_b: list[str],
    known_answers: list[KnownAnswer],
    rng: random.Random,
) -> None:
    shown: list[int] = []
    for i in chosen:
        if _same(responses_a[i], responses_b[i]):
            item = ExperimentItem(
                experiment_id=experiment.id,
                prompt_id=dataset.prompt_ids[i],
                auto_tie=True,
                context=_context(dataset, i),
                left_text=responses_a[i],
                right_text=responses_b[i],
            )
            session.add(item)
            session.flush()
            session.add(Rating(experiment_id=experiment.id, item_id=item.id, outcome="tie", auto_tie=True))
        else:
            shown.append(i)
    rng.shuffle(shown)
    size = experiment.prompts_per_task
    prompt_index = {pid: i for i, pid in enumerate(dataset.prompt_ids)}
    for t, start in enumerate(range(0, len(shown), size)):
        task = Task(experiment_id=experiment.id, index=t, slots=experiment.raters_per_prompt)
        session.add(task)
        session.flush()
        block: list[ExperimentItem] = []
        for i in shown[start : start + size]:
            left_is_a = rng.random() < 0.5
            a, b = responses_a[i], responses_b[i]
            block.append(
                ExperimentItem(
                    experiment_id=experiment.id,
                    task_id=task.id,
                    prompt_id=dataset.prompt_ids[i],
                    kind=ItemKind.pair,
                    left_is_a=left_is_a,
                    context=_context(dataset, i),
                    left_text=a if left_is_a else b,
                    right_text=b if left_is_a else a,
                )
            )
        pairs = list(block)
        for _ in range(experiment.attention_checks_per_task):
            check = _attention_item(
                experiment, task, dataset, rng.choice(pairs).prompt_id, prompt_index, responses_a, responses_b, rng
            )
            if check is not None:
                block.append(check)
        if known_answers:
            known = known_answers[t % len(known_answers)]
            left_is_a = rng.random() < 0.5
            block.append(
                ExperimentItem(
                    experiment_id=experiment.id,
                    task_id=task.id,
                    prompt_id=known.prompt_id,
                    kind=ItemKind.known_answer,
                    left_is_a=left_is_a,
                    context=_context(dataset, prompt_index[known.prompt_id]),
                    expected="A",
                    left_text=known.better if left_is_a else known.worse,
                    right_text=known.worse if left_is_a else known.better,
                )
            )
        for original in rng.sample(pairs, min(experiment.repeats_per_task, len(pairs) - 1 if len(pairs) > 1 else 0)):
            session.add(original)
            session.flush()
            block.append(
                ExperimentItem(
                    experiment_id=experiment.id,
                    task_id=task.id,
                    prompt_id=original.prompt_id,
                    kind=ItemKind.repeat,
                    left_is_a=not original.left_is_a,
                    context=original.context,
                    repeat_of_id=original.id,
                    left_text=original.right_text,
                    right_text=original.left_text,
                )
            )
        rng.shuffle(block)  # checks land anywhere in the block, never always last
        for position, item in enumerate(block):
            item.position = position
            session.add(item)
    session.flush()


def _attention_item(
    experiment: Experiment,
    task: Task,
    dataset: Dataset,
    prompt_id: str,
    prompt_index: dict[str, int],
    responses_a: list[str],
    responses_b: list[str],
    rng: random.Random,
) -> ExperimentItem | None:
    """The real response of A or B (chosen at random) against a degraded one; A of the check is the real one."""
    i = prompt_index[prompt_id]
    source = responses_a if rng.random() < 0.5 else responses_b
    others = [source[j] for j in rng.sample(range(len(source)), min(20, len(source))) if j != i]
    degraded = degrade(source[i], others, rng)
    if degraded is None:
        return None
    left_is_a = rng.random() < 0.5
    return ExperimentItem(
        experiment_id=experiment.id,
        task_id=task.id,
        prompt_id=prompt_id,
        kind=ItemKind.attention,
        left_is_a=left_is_a,
        context=_context(dataset, i),
        expected="A",
        note=degraded.how,
        left_text=source[i] if left_is_a else degraded.text,
        right_text=degraded.text if left_is_a else source[i],
    )


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


def close(session: Session, admin: User, experiment_id: int) -> Experiment:
    experiment = admin_experiment(session, admin, experiment_id)
    if experiment.status == ExperimentStatus.closed:
        return experiment
    experiment.status, experiment.closed_at = ExperimentStatus.closed, utcnow()
    session.add(experiment)
    session.commit()
    audit.record(session, actor=admin, action="close_experiment", target=f"experiment #{experiment.id}")
    from hub.services.human_pipeline import complete_if_done

    complete_if_done(session, experiment)
    from hub.jobs import enqueue_refit

    enqueue_refit(experiment.dataset_name)
    session.refresh(experiment)
    return experiment
