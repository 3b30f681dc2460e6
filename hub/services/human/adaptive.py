"""Adaptive experiments: tasks are released to raters in rounds, and the experiment stops as soon as an anytime-valid
sequential test (evaluation.irt.sequential) decides the comparison, or when its judgement budget or its prompts
run out.

After every submitted task, `advance` looks at the released tasks. While one is unfinished nothing happens. When
all are done, every kept judgement of a real pair so far (excluded raters left out, automatic ties never shown so
never counted) is fed to the test in the order it arrived. The e-process may be looked at after every round without
inflating the error rate, so stopping at the first crossing keeps P(wrong decision) <= alpha. Otherwise the next
`round_tasks` tasks are released. Both steps are conditional updates, so two raters finishing the round together
release it once.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import func, or_, update
from sqlmodel import Session, col, select

from evaluation.irt.sequential import SequentialTest
from hub.models import Experiment, ExperimentItem, ExperimentStatus, ItemKind, Rater, Rating, Task
from hub.models.common import utcnow
from hub.services.human.experiments import AdaptiveOptions
from hub.services.human.human_pipeline import mark_closed

log = logging.getLogger(__name__)
SCORE = {"A": 1, "tie": 0, "B": -1}


def options(experiment: Experiment) -> AdaptiveOptions | None:
    raw = experiment.settings.get("adaptive")
    return None if raw is None else AdaptiveOptions.model_validate(raw["options"])


def _round_finished(session: Session, experiment: Experiment) -> tuple[bool, int]:
    """Whether every released task has all its raters, and how many tasks the experiment has."""
    total = session.exec(select(func.count()).select_from(Task).where(Task.experiment_id == experiment.id)).one()
    released = experiment.released_tasks if experiment.released_tasks is not None else total
    missing = session.exec(
        select(func.sum(Task.slots - Task.completed)).where(Task.experiment_id == experiment.id, Task.index < released)
    ).one()
    return (missing or 0) == 0, int(total)


def kept_outcomes(session: Session, experiment_id: int) -> list[int]:
    """+1 / 0 / -1 (A better / tie / B better) for every kept judgement of a real pair, in arrival order."""
    query = (
        select(Rating.outcome)
        .join(ExperimentItem, col(ExperimentItem.id) == col(Rating.item_id))
        .outerjoin(Rater, col(Rater.id) == col(Rating.rater_id))
        .where(
            Rating.experiment_id == experiment_id,
            ExperimentItem.kind == ItemKind.pair,
            ~col(Rating.auto_tie),
            or_(col(Rater.id).is_(None), ~col(Rater.excluded)),
        )
        .order_by(col(Rating.id))
    )
    return [SCORE[outcome] for outcome in session.exec(query)]


def sequential_state(session: Session, experiment: Experiment) -> SequentialTest | None:
    chosen = options(experiment)
    if chosen is None:
        return None
    test = SequentialTest(alpha=chosen.alpha, budget=chosen.budget_judgements)
    test.update(kept_outcomes(session, experiment.id))
    return test


def advance(session: Session, experiment_id: int) -> str | None:
    """After a task was submitted: stop the experiment or release the next round once the current one is done.
    Returns what happened (`stopped`, `released`) or None."""
    experiment = session.get(Experiment, experiment_id)
    if experiment is None or experiment.status != ExperimentStatus.open or options(experiment) is None:
        return None
    session.refresh(experiment)
    finished, total = _round_finished(session, experiment)
    if not finished:
        return None
    test = sequential_state(session, experiment)
    assert test is not None  # options() checked above
    released = experiment.released_tasks if experiment.released_tasks is not None else total
    if test.done or released >= total:
        return "stopped" if _stop(session, experiment, test, released, total) else None
    step = options(experiment).round_tasks  # type: ignore[union-attr]
    moved = session.exec(  # type: ignore[call-overload]
        update(Experiment)
        .where(col(Experiment.id) == experiment.id, col(Experiment.released_tasks) == released)
        .values(released_tasks=min(total, released + step))
    )
    session.commit()
    return "released" if moved.rowcount == 1 else None


def _stop(session: Session, experiment: Experiment, test: SequentialTest, released: int, total: int) -> bool:
    reason = "decided" if test.decision else "budget" if test.done else "prompts exhausted"
    stopped = {
        "reason": reason,
        "decision": test.decision,
        "judgements": test.used,
        "wins": test.wins,
        "losses": test.losses,
        "ties": test.ties,
        "log_evalues": list(test.log_evalues),
        "released_tasks": released,
        "total_tasks": total,
        "at": utcnow().isoformat(),
    }
    settings = {**experiment.settings, "adaptive": {**experiment.settings["adaptive"], "stopped": stopped}}
    if not mark_closed(session, experiment, actor=None, settings=settings):
        return False
    log.info("adaptive experiment #%s stopped (%s) after %s judgements", experiment.id, reason, test.used)
    return True


def summary(session: Session, experiment: Experiment) -> dict[str, Any] | None:
    """For the experiment page: the options, the tasks released so far and the test's state or its stop."""
    chosen = options(experiment)
    if chosen is None:
        return None
    test = sequential_state(session, experiment)
    total = session.exec(select(func.count()).select_from(Task).where(Task.experiment_id == experiment.id)).one()
    return {
        "options": chosen.model_dump(),
        "released_tasks": experiment.released_tasks if experiment.released_tasks is not None else total,
        "total_tasks": total,
        "judgements": test.used if test else 0,
        "log_evalues": list(test.log_evalues) if test else None,
        "threshold": 2 / chosen.alpha,
        "order": experiment.settings["adaptive"].get("order"),
        "stopped": experiment.settings["adaptive"].get("stopped"),
    }
