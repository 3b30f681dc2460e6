"""An admin's decision on a rater (include or exclude), as the admin pages and the API take it: the decision itself
(`raters.set_excluded`: audited, stamps `Rater.reviewed_at`), then the refit of the published IRT fit of every dataset
the rater judged, since the decision changes which judgements the fit counts (excluded ones leave it, held-out ones
are released into it). When the queue is down, the periodic refit (every 10 minutes, only where the judgements
changed) catches up."""

from __future__ import annotations

import logging

from sqlmodel import Session, col, select

from hub import queue
from hub.errors import QueueUnavailable
from hub.models import Experiment, Rater, Rating, User
from hub.services.human import raters

log = logging.getLogger(__name__)


def decide_on_rater(
    session: Session,
    admin: User,
    rater_id: int,
    *,
    excluded: bool,
    reason: str = "",
    block: raters.Block | None = None,
) -> Rater:
    rater = raters.set_excluded(session, admin, rater_id, excluded=excluded, reason=reason, block=block)
    enqueue_refits(session, rater)
    return rater


def enqueue_refits(session: Session, rater: Rater) -> list[str]:
    """Enqueue the refit of every dataset the rater judged; the datasets whose refit was enqueued."""
    query = (
        select(Experiment.dataset_name)
        .join(Rating, col(Rating.experiment_id) == col(Experiment.id))
        .where(Rating.rater_id == rater.id)
        .distinct()
    )
    enqueued = []
    for dataset_name in sorted(session.exec(query)):
        try:
            queue.enqueue_refit(dataset_name)
        except QueueUnavailable:
            log.warning("refit of %s not enqueued (queue unavailable): the periodic refit will do it", dataset_name)
            continue
        enqueued.append(dataset_name)
    return enqueued
