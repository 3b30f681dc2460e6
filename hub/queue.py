"""The job queue (Huey: a SQLite queue on one machine, Redis for many): services enqueue a job by NAME here.

This module knows the jobs' names and schedules, never the code that runs them: `hub.jobs` (the worker side) hands
in a handler per name with `set_handlers` before a consumer starts. So services import this module, and nothing
here imports a service."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import redis
from huey import Huey, RedisHuey, SqliteHuey, crontab
from redis.backoff import NoBackoff
from redis.retry import Retry

from hub.errors import QueueUnavailable
from hub.models import OutboxJob
from hub.settings import HubSettings, get_settings

EVALUATE_SUBMISSION = "evaluate_submission"
REQUEUE_STALLED = "requeue_stalled"
POLL_MTURK = "poll_mturk"
REFIT_IRT = "refit_irt"
REFIT_ALL_IRT = "refit_all_irt"
PUBLISH_SNAPSHOT = "publish_snapshot"  # the public snapshot to HUB_SNAPSHOT_URL (off when empty)
JUDGE_SUBMISSION = "judge_submission"  # a judging run (LLM judges, rubrics, function metrics) by run id
SEND_MAIL = "send_mail"  # the e-mail outbox over SMTP (a no-op when HUB_SMTP_HOST is empty)
EVALUATE_CONVERSATION_SET = "evaluate_conversation_set"  # function metrics over an uploaded conversation set, by id
RATER_QA = "rater_qa"  # a QA rubric graded by a judge over the raters' reasons of an experiment, by run id
SUGGEST_ANNOTATIONS = "suggest_annotations"  # a study judge's annotation suggestions for one message, by message id
JOB_NAMES = (
    EVALUATE_SUBMISSION,
    REQUEUE_STALLED,
    POLL_MTURK,
    REFIT_IRT,
    REFIT_ALL_IRT,
    JUDGE_SUBMISSION,
    PUBLISH_SNAPSHOT,
    SEND_MAIL,
    EVALUATE_CONVERSATION_SET,
    RATER_QA,
    SUGGEST_ANNOTATIONS,
)

# What the queue raises when it cannot take a job: Redis down or unreachable, the SQLite queue's file unwritable.
QUEUE_ERRORS = (redis.exceptions.RedisError, sqlite3.Error, OSError)

_handlers: dict[str, Callable[..., Any]] = {}


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


@lru_cache
def get_huey() -> Huey:
    return make_huey(get_settings())


def set_handlers(handlers: dict[str, Callable[..., Any]]) -> None:
    """The worker side's function for each job name (every name in JOB_NAMES)."""
    missing = set(JOB_NAMES) - set(handlers)
    if missing:
        raise ValueError(f"no handler for job(s) {sorted(missing)}")
    _handlers.update(handlers)


def _runner(name: str) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        handler = _handlers.get(name)
        if handler is None:
            raise RuntimeError(f"job {name!r} has no handler: start consumers through hub.jobs")
        return handler(*args)

    run.__name__ = run.__qualname__ = name
    return run


@lru_cache
def tasks() -> dict:
    """The queue's tasks by name, registered once on the configured Huey instance."""
    huey = get_huey()
    return {
        EVALUATE_SUBMISSION: huey.task(retries=2, retry_delay=10, name=EVALUATE_SUBMISSION)(
            _runner(EVALUATE_SUBMISSION)
        ),
        REQUEUE_STALLED: huey.periodic_task(crontab(minute="*"), name=REQUEUE_STALLED)(_runner(REQUEUE_STALLED)),
        POLL_MTURK: huey.periodic_task(
            crontab(minute=_every_minutes(get_settings().mturk_poll_seconds)), name=POLL_MTURK
        )(_runner(POLL_MTURK)),
        REFIT_IRT: huey.task(retries=1, retry_delay=30, name=REFIT_IRT)(_runner(REFIT_IRT)),
        # Judgements arrive one task at a time; a refit every 10 minutes (only where they changed) is enough.
        REFIT_ALL_IRT: huey.periodic_task(crontab(minute="*/10"), name=REFIT_ALL_IRT)(_runner(REFIT_ALL_IRT)),
        PUBLISH_SNAPSHOT: huey.periodic_task(_every_hours(get_settings().snapshot_every_hours), name=PUBLISH_SNAPSHOT)(
            _runner(PUBLISH_SNAPSHOT)
        ),
        JUDGE_SUBMISSION: huey.task(retries=1, retry_delay=30, name=JUDGE_SUBMISSION)(_runner(JUDGE_SUBMISSION)),
        EVALUATE_CONVERSATION_SET: huey.task(retries=1, retry_delay=10, name=EVALUATE_CONVERSATION_SET)(
            _runner(EVALUATE_CONVERSATION_SET)
        ),
        RATER_QA: huey.task(retries=1, retry_delay=30, name=RATER_QA)(_runner(RATER_QA)),
        SUGGEST_ANNOTATIONS: huey.task(retries=1, retry_delay=10, name=SUGGEST_ANNOTATIONS)(
            _runner(SUGGEST_ANNOTATIONS)
        ),
        SEND_MAIL: huey.periodic_task(crontab(minute="*"), name=SEND_MAIL)(_runner(SEND_MAIL)),
    }


def _every_minutes(seconds: int) -> str:
    minutes = max(1, round(seconds / 60))
    return "*" if minutes == 1 else f"*/{minutes}"


def _every_hours(hours: int) -> crontab:
    return crontab(minute="7", hour="3" if hours >= 24 else f"*/{hours}")  # daily at 03:07 UTC by default


def enqueue(job_name: str, *args: Any) -> None:
    """Put a job on the queue by name; QueueUnavailable (503, Retry-After) when the queue cannot take it."""
    try:
        tasks()[job_name](*args)
    except QUEUE_ERRORS as exc:
        raise QueueUnavailable(
            f"queue unavailable, will retry: the job is kept and sent when the queue is back ({type(exc).__name__})"
        ) from exc


def send_outbox_job(job: OutboxJob) -> None:
    enqueue(job.task, job.submission_id)


def enqueue_refit(dataset_name: str) -> None:
    enqueue(REFIT_IRT, dataset_name)


def enqueue_evaluation(submission_id: int) -> None:
    enqueue(EVALUATE_SUBMISSION, submission_id)
