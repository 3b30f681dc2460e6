"""Builds a new experiment's items and tasks: automatic ties, seeded blocks of pairs and their quality checks.

Every item is a snapshot (context and both responses), so later changes to a submission or a dataset cannot
change what was judged. The order of prompts, the blocks, the left/right side of every pair and where the
quality checks sit in each block all come from the one seeded generator passed in.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, Field
from sqlmodel import Session

from evaluation.dataset import Dataset
from hub.models import Experiment, ExperimentItem, ItemKind, Rating, Task
from hub.services.human.check_items import degrade


class KnownAnswer(BaseModel):
    """An admin-supplied check pair: for this prompt, `better` is the response a careful rater prefers."""

    prompt_id: str = Field(min_length=1, max_length=200)
    better: str = Field(min_length=1, max_length=10_000)
    worse: str = Field(min_length=1, max_length=10_000)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _context(dataset: Dataset, index: int) -> list[dict[str, str]]:
    return [{"role": turn.role, "content": turn.content} for turn in dataset.prompts[index].context]


def build_items(
    session: Session,
    experiment: Experiment,
    dataset: Dataset,
    chosen: list[int],
    responses_a: list[str],
    responses_b: list[str],
    known_answers: list[KnownAnswer],
    rng: random.Random,
    priority: dict[int, float] | None = None,
) -> None:
    """Add every item and task of `experiment` for the prompts `chosen` (dataset indexes); flushes, never commits.

    `priority` (dataset index -> expected information) puts the most informative prompts in the first tasks, which
    an adaptive experiment releases first; the seeded shuffle still breaks ties."""
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
    if priority is not None:
        shown.sort(key=lambda i: -priority.get(i, 0.0))
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
