"""Background jobs through Huey: a SQLite queue on one machine, Redis for many; the same tasks either way."""

from __future__ import annotations

import sqlite3
from functools import lru_cache

import redis
from huey import Huey, RedisHuey, SqliteHuey, crontab
from huey.consumer import Consumer
from redis.backoff import NoBackoff
from redis.retry import Retry

from hub.db import get_engine
from hub.errors import QueueUnavailable
from hub.models import OutboxJob
from hub.settings import HubSettings, get_settings
from hub.storage import get_storage


def make_huey(settings: HubSettings) -> Huey:
    if settings.queue_url.startswith("redis://"):
        # Fail fast when Redis is down (one quick retry, 2 s to connect): the job waits in the outbox instead.
        pool = redis.ConnectionPool.from_url(
            settings.queue_url, socket_connect_timeout=2, socket_timeout=10, retry=Retry(NoBackoff(), 1)
        )
        return RedisHuey("chateval-hub", connection_pool=pool)
    if settings.queue_url:
        raise ValueError(f"HUB_QUEUE_URL must be redis://... or empty, not {settings.queue_url!r}")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteHuey("chateval-hub", filename=str(settings.data_dir / "queue.db"))


def evaluate_submission(submission_id: int) -> str | None:
    from hub.services.evaluation import EvaluationRun

    status = EvaluationRun(get_engine(), get_storage(), submission_id).run()
    return status.value if status else None


def requeue_stalled() -> list[int]:
    """The periodic sweep: send the jobs the outbox holds (the queue was down), then restart stalled evaluations."""
    from hub.services.evaluation import stalled_submissions
    from hub.services.outbox import drain

    sent = drain(get_engine(), send_outbox_job)
    stalled = stalled_submissions(get_engine())
    for submission_id in stalled:
        enqueue_evaluation(submission_id)
    return sent + stalled


def poll_mturk() -> int:
    """Fetch submitted Mechanical Turk assignments of open MTurk experiments (approve, reconcile)."""
    from hub.services.mturk import poll_open_experiments

    return poll_open_experiments(get_engine())


def refit_irt(dataset_name: str) -> int | None:
    """Refit the published IRT model of a dataset if its public judgements changed; the new fit's id or None."""
    from hub.services.irt_fits import refit

    return refit(get_engine(), dataset_name)


def refit_all_irt() -> list[int]:
    from hub.services.irt_fits import refit_all

    return refit_all(get_engine())


@lru_cache
def get_huey() -> Huey:
    return make_huey(get_settings())


@lru_cache
def tasks() -> dict:
    """The queue's tasks, registered once on the configured Huey instance."""
    huey = get_huey()
    return {
        "evaluate_submission": huey.task(retries=2, retry_delay=10, name="evaluate_submission")(evaluate_submission),
        "requeue_stalled": huey.periodic_task(crontab(minute="*"), name="requeue_stalled")(requeue_stalled),
        "poll_mturk": huey.periodic_task(
            crontab(minute=_every_minutes(get_settings().mturk_poll_seconds)), name="poll_mturk"
        )(poll_mturk),
        "refit_irt": huey.task(retries=1, retry_delay=30, name="refit_irt")(refit_irt),
        # Judgements arrive one task at a time; a refit every 10 minutes (only where they changed) is enough.
        "refit_all_irt": huey.periodic_task(crontab(minute="*/10"), name="refit_all_irt")(refit_all_irt),
    }


def _every_minutes(seconds: int) -> str:
    minutes = max(1, round(seconds / 60))
    return "*" if minutes == 1 else f"*/{minutes}"


# What the queue raises when it cannot take a job: Redis down or unreachable, the SQLite queue's file unwritable.
QUEUE_ERRORS = (redis.exceptions.RedisError, sqlite3.Error, OSError)


def send_job(task: str, *args) -> None:
    """Put a job on the queue; QueueUnavailable (503, Retry-After) when the queue cannot take it."""
    try:
        tasks()[task](*args)
    except QUEUE_ERRORS as exc:
        raise QueueUnavailable(
            f"queue unavailable, will retry: the job is kept and sent when the queue is back ({type(exc).__name__})"
        ) from exc


def send_outbox_job(job: OutboxJob) -> None:
    send_job(job.task, job.submission_id)


def enqueue_refit(dataset_name: str) -> None:
    send_job("refit_irt", dataset_name)


def enqueue_evaluation(submission_id: int) -> None:
    send_job("evaluate_submission", submission_id)


class EmbeddedConsumer(Consumer):
    """Worker threads inside another program (`chateval serve`, tests): leaves its signal handlers alone."""

    def _set_signal_handlers(self) -> None:
        pass


def start_embedded_consumer(workers: int = 1, *, periodic: bool = True) -> EmbeddedConsumer:
    """Start consuming the queue in background threads; call `.stop(graceful=True)` to finish."""
    tasks()  # register the tasks before the consumer looks them up
    consumer = EmbeddedConsumer(get_huey(), workers=workers, periodic=periodic, initial_delay=0.05, max_delay=1.0)
    consumer.start()
    return consumer
