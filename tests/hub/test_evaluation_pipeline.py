"""An approved submission is scored by the toolkit, all scores at once, and can be retried without duplicates."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from evaluation.evaluate import evaluate
from evaluation.loglik import parse_loglik
from hub.models import Score, Submission, SubmissionStatus, System
from hub.models.common import utcnow
from hub.services.submissions.evaluation import EvaluationRun, stalled_submissions
from hub.storage import get_storage


@pytest.fixture
def dataset():
    return load_dataset("hub-open-v1")


def make_submission(engine, dataset, lines: list[str], *, loglik: bytes | None = None, status="approved") -> int:
    store = get_storage()
    with Session(engine) as session:
        system = System(name="echo-test", is_public=True)
        session.add(system)
        session.commit()
        submission = Submission(
            system_id=system.id,
            dataset_name=dataset.name,
            dataset_fingerprint=dataset.fingerprint,
            responses_sha256=store.put(("\n".join(lines) + "\n").encode()),
            loglik_sha256=store.put(loglik) if loglik else None,
            status=SubmissionStatus(status),
        )
        session.add(submission)
        session.commit()
        return submission.id


def scores_of(engine, submission_id: int) -> dict[str, Score]:
    with Session(engine) as session:
        return {s.metric: s for s in session.exec(select(Score).where(Score.submission_id == submission_id))}


def wait_until_evaluated(engine, submission_id: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Session(engine) as session:
            if session.get(Submission, submission_id).status == SubmissionStatus.evaluated:
                return
        time.sleep(0.1)


def loglik_bytes(dataset) -> bytes:
    records = [
        {"prompt_id": pid, "logprob": -2.0 * (i + 1), "tokens": i + 1} for i, pid in enumerate(dataset.prompt_ids)
    ]
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_approved_submission_gets_the_toolkits_exact_scores(hub_env, dataset):
    lines = [p.references[1] for p in dataset.prompts]
    loglik = loglik_bytes(dataset)
    submission_id = make_submission(hub_env, dataset, lines, loglik=loglik)

    assert EvaluationRun(hub_env, get_storage(), submission_id).run() == SubmissionStatus.evaluated

    expected = evaluate(dataset, lines, loglik=parse_loglik(loglik, dataset=dataset, name="x"))
    stored = scores_of(hub_env, submission_id)
    for outcome in expected.outcomes:
        if outcome.result is None:
            assert outcome.metric not in stored  # embedding-average: no vectors configured, no invented number
            continue
        assert stored[outcome.metric].corpus == outcome.result.corpus
        assert stored[outcome.metric].signature == outcome.result.signature
        assert stored[outcome.metric].per_prompt == outcome.result.per_prompt
    with Session(hub_env) as session:
        submission = session.get(Submission, submission_id)
        assert (submission.status, submission.progress, submission.error) == ("evaluated", 1.0, None)


def test_running_again_adds_no_duplicate_scores(hub_env, dataset):
    submission_id = make_submission(hub_env, dataset, [p.references[0] for p in dataset.prompts])
    EvaluationRun(hub_env, get_storage(), submission_id).run()
    first = {m: s.id for m, s in scores_of(hub_env, submission_id).items()}
    with Session(hub_env) as session:  # an admin re-run after nothing changed
        session.get(Submission, submission_id).status = SubmissionStatus.approved
        session.commit()
    EvaluationRun(hub_env, get_storage(), submission_id).run()
    assert {m: s.id for m, s in scores_of(hub_env, submission_id).items()} == first


def test_submission_not_yet_approved_is_not_scored(hub_env, dataset):
    submission_id = make_submission(hub_env, dataset, ["x"] * len(dataset), status="submitted")
    assert EvaluationRun(hub_env, get_storage(), submission_id).run() == SubmissionStatus.submitted
    assert scores_of(hub_env, submission_id) == {}


def test_a_failure_is_recorded_with_its_message_and_no_partial_scores(hub_env, dataset):
    submission_id = make_submission(hub_env, dataset, ["too few lines"])
    assert EvaluationRun(hub_env, get_storage(), submission_id).run() == SubmissionStatus.failed
    with Session(hub_env) as session:
        submission = session.get(Submission, submission_id)
        assert submission.status == "failed"
        assert f"expected {len(dataset)} lines" in submission.error and "found 1" in submission.error
    assert scores_of(hub_env, submission_id) == {}


def test_an_evaluation_without_heartbeat_is_found_stalled(hub_env, dataset):
    submission_id = make_submission(hub_env, dataset, ["x"] * len(dataset), status="evaluating")
    with Session(hub_env) as session:
        session.get(Submission, submission_id).heartbeat_at = utcnow() - timedelta(minutes=10)
        session.commit()
    assert stalled_submissions(hub_env) == [submission_id]


def test_the_sqlite_job_queue_runs_the_evaluation_in_a_consumer(hub_env, dataset):
    from hub.jobs import start_embedded_consumer
    from hub.queue import enqueue_evaluation

    submission_id = make_submission(hub_env, dataset, [p.references[0] for p in dataset.prompts])
    enqueue_evaluation(submission_id)
    consumer = start_embedded_consumer(periodic=False)
    try:
        wait_until_evaluated(hub_env, submission_id)
    finally:
        consumer.stop(graceful=True)
    assert "bleu-2" in scores_of(hub_env, submission_id)


def test_the_redis_job_queue_runs_the_same_task(hub_env, dataset, monkeypatch):
    """Many-machine mode: HUB_QUEUE_URL=redis://... and the same task code."""
    import redis

    from hub import jobs, queue, settings

    url = "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url).ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.skip(f"Redis not reachable at {url}: {exc}")
    monkeypatch.setenv("HUB_QUEUE_URL", url)
    settings.get_settings.cache_clear()
    queue.get_huey.cache_clear()
    queue.tasks.cache_clear()
    queue.get_huey().flush()
    assert type(queue.get_huey()).__name__ == "RedisHuey"
    submission_id = make_submission(hub_env, dataset, [p.references[1] for p in dataset.prompts])
    queue.enqueue_evaluation(submission_id)
    consumer = jobs.start_embedded_consumer(periodic=False)
    try:
        wait_until_evaluated(hub_env, submission_id)
    finally:
        consumer.stop(graceful=True)
        queue.get_huey().flush()
    assert "distinct-2" in scores_of(hub_env, submission_id)
