"""Who may see which human evaluation: public systems and experiments, and what a given viewer may open or list.

An experiment is public once launched and when both its systems are public. Admins see everything; the owner of a
system also sees its experiments against systems that are public or their own. A viewer who may not see an
experiment is told it does not exist (NotFound). Lists decide for all their experiments at once
(`public_experiment_ids`: two queries, whatever the number of experiments).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlmodel import Session, col, select

from hub.errors import NotFound
from hub.models import Experiment, ExperimentStatus, Submission, System, User
from hub.services.submissions.results import RESULT_STATUSES


def system_is_public(session: Session, system: System, dataset_name: str) -> bool:
    """Baselines; imported systems marked public; submitted systems whose owner opted in and whose responses on
    this dataset were approved (the same rule as `can_view`)."""
    if system.is_baseline:
        return True
    if not system.is_public:
        return False
    if system.owner_id is None:
        return True
    query = select(Submission.id).where(
        Submission.system_id == system.id,
        Submission.dataset_name == dataset_name,
        col(Submission.status).in_(RESULT_STATUSES),
    )
    return session.exec(query).first() is not None


def experiment_is_public(session: Session, experiment: Experiment) -> bool:
    if experiment.status == ExperimentStatus.draft:
        return False
    systems = (session.get(System, experiment.system_a_id), session.get(System, experiment.system_b_id))
    return all(s is not None and system_is_public(session, s, experiment.dataset_name) for s in systems)


def _public_pairs(session: Session, pairs: set[tuple[int, str]]) -> set[tuple[int, str]]:
    """The (system id, dataset) pairs among `pairs` where `system_is_public` holds: one query for the systems, one
    for the approved submissions of those that need one."""
    systems = {s.id: s for s in session.exec(select(System).where(col(System.id).in_({i for i, _ in pairs})))}
    public, owned = set(), set()
    for system_id, dataset_name in pairs:
        system = systems.get(system_id)
        if system is None or not (system.is_baseline or system.is_public):
            continue
        if system.is_baseline or system.owner_id is None:
            public.add((system_id, dataset_name))
        else:
            owned.add((system_id, dataset_name))
    if owned:
        query = (
            select(Submission.system_id, Submission.dataset_name)
            .where(
                col(Submission.system_id).in_({i for i, _ in owned}),
                col(Submission.dataset_name).in_({d for _, d in owned}),
                col(Submission.status).in_(RESULT_STATUSES),
            )
            .distinct()
        )
        public |= owned & {(system_id, dataset_name) for system_id, dataset_name in session.exec(query)}
    return public


def public_experiment_ids(session: Session, experiments: Iterable[Experiment]) -> set[int]:
    """The ids of the experiments among these for which `experiment_is_public` holds, decided in two queries."""
    launched = [e for e in experiments if e.status != ExperimentStatus.draft]
    pairs = {(i, e.dataset_name) for e in launched for i in (e.system_a_id, e.system_b_id)}
    public = _public_pairs(session, pairs) if pairs else set()
    return {
        e.id
        for e in launched
        if e.id is not None and (e.system_a_id, e.dataset_name) in public and (e.system_b_id, e.dataset_name) in public
    }


def can_view_experiment(session: Session, experiment: Experiment, viewer: User | None) -> bool:
    """Admins see every experiment; anyone a public one; a launched one that is not public only a viewer who may see
    both its systems (each public or their own), so a comparison never reveals someone else's private system."""
    if viewer is not None and viewer.is_admin:
        return True
    if experiment_is_public(session, experiment):
        return True
    if viewer is None or experiment.status == ExperimentStatus.draft:
        return False
    systems = (session.get(System, experiment.system_a_id), session.get(System, experiment.system_b_id))
    return all(
        s is not None and (s.owner_id == viewer.id or system_is_public(session, s, experiment.dataset_name))
        for s in systems
    )


def visible_experiment(session: Session, experiment_id: int, viewer: User | None) -> Experiment:
    experiment = session.get(Experiment, experiment_id)
    if experiment is None or not can_view_experiment(session, experiment, viewer):
        raise NotFound(f"no experiment #{experiment_id}")
    return experiment


def visible_experiments(
    session: Session, viewer: User | None, *conditions: Any, dataset: str | None = None
) -> list[Experiment]:
    """The experiments matching `conditions` (SQL expressions) the viewer may see, newest first."""
    query = select(Experiment).where(*conditions).order_by(col(Experiment.id).desc())
    if dataset is not None:
        query = query.where(Experiment.dataset_name == dataset)
    experiments = list(session.exec(query))
    if viewer is not None and viewer.is_admin:
        return experiments
    public = public_experiment_ids(session, experiments)
    if viewer is None:
        return [e for e in experiments if e.id in public]
    return [e for e in experiments if e.id in public or can_view_experiment(session, e, viewer)]
