"""Approving while the job queue (a real Redis) is down: the admin gets 503 with Retry-After, the job waits in the
outbox committed with the approval, and once Redis is back the sweep sends it: the submission is evaluated once."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import jobs, queue, settings
from hub.models import OutboxJob, Score, Submission, SubmissionStatus
from hub.services.platform import outbox as outbox_service
from hub.services.submissions import evaluation
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import auth, post

REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisProcess:
    """A throwaway redis-server on a free port, no persistence, that can be stopped and started again."""

    def __init__(self, folder):
        self.folder, self.port, self.process = folder, free_port(), None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, cwd=self.folder, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def redis_queue(hub_env, tmp_path, monkeypatch):
    server = RedisProcess(tmp_path)
    server.start()
    monkeypatch.setenv("HUB_QUEUE_URL", server.url)
    monkeypatch.setenv("HUB_RATE_LIMIT_URL", "memory://")  # this test is about the queue being down, not the limiter
    for cached in (settings.get_settings, queue.get_huey, queue.tasks):
        cached.cache_clear()
    yield server
    server.stop()
    for cached in (settings.get_settings, queue.get_huey, queue.tasks):
        cached.cache_clear()


@pytest.fixture
def scoring_calls(monkeypatch):
    """How many times the toolkit scored each submission (the real scoring, counted)."""
    calls: list[int] = []
    original = evaluation.EvaluationRun._score

    def counted(self, job):
        calls.append(self.submission_id)
        return original(self, job)

    monkeypatch.setattr(evaluation.EvaluationRun, "_score", counted)
    return calls


def status_of(engine, submission_id: int) -> SubmissionStatus:
    with Session(engine) as session:
        return session.get(Submission, submission_id).status


def wait_for(engine, submission_id: int, wanted: SubmissionStatus, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if status_of(engine, submission_id) == wanted:
            return
        time.sleep(0.1)
    raise AssertionError(f"submission {submission_id} stayed {status_of(engine, submission_id)}")


def test_approval_while_redis_is_down_is_evaluated_once_when_it_is_back(
    hub_env, people, redis_queue, scoring_calls, monkeypatch
):
    monkeypatch.setattr(outbox_service, "OUTBOX_GRACE", outbox_service.OUTBOX_GRACE * 0)  # the sweep takes all now
    with TestClient(create_app()) as client:
        [submission] = post(client, people["owner"]).json()
        redis_queue.stop()
        reply = client.post(f"/api/admin/submissions/{submission['id']}/approve", headers=auth(people["admin"]))
        assert reply.status_code == 503, reply.text
        assert "queue unavailable, will retry" in reply.json()["error"]
        assert int(reply.headers["Retry-After"]) > 0
        # The approval and its job were committed together; nothing ran.
        assert status_of(hub_env, submission["id"]) == SubmissionStatus.approved
        with Session(hub_env) as session:
            [waiting] = session.exec(select(OutboxJob)).all()
        assert (waiting.submission_id, waiting.task, waiting.attempts) == (submission["id"], "evaluate_submission", 1)
        assert jobs.requeue_stalled() == []  # the sweep while the queue is still down sends nothing and keeps it

        redis_queue.start()
        consumer = jobs.start_embedded_consumer(workers=2, periodic=False)
        try:
            assert jobs.requeue_stalled() == [submission["id"]]  # the periodic sweep, run now
            wait_for(hub_env, submission["id"], SubmissionStatus.evaluated)
            assert jobs.requeue_stalled() == []  # the outbox is empty: nothing sent twice
            queue.enqueue_evaluation(submission["id"])  # a duplicate job (e.g. sent twice) does not score again
            time.sleep(1.0)
        finally:
            consumer.stop(graceful=True)
    assert scoring_calls == [submission["id"]]
    with Session(hub_env) as session:
        assert session.exec(select(OutboxJob)).all() == []
        metrics = [s.metric for s in session.exec(select(Score).where(Score.submission_id == submission["id"]))]
    assert len(metrics) == len(set(metrics)) > 0


def test_approving_again_after_an_outage_sends_the_waiting_job(hub_env, people, redis_queue, scoring_calls):
    """The 503's Retry-After invites the admin to try again: a second approve sends the waiting job (not a 409)."""
    with TestClient(create_app()) as client:
        [submission] = post(client, people["owner"]).json()
        redis_queue.stop()
        url = f"/api/admin/submissions/{submission['id']}/approve"
        assert client.post(url, headers=auth(people["admin"])).status_code == 503
        assert client.post(url, headers=auth(people["admin"])).status_code == 503  # still down: still waiting
        redis_queue.start()
        again = client.post(url, headers=auth(people["admin"]))
        assert again.status_code == 200 and again.json()["status"] == "approved"
        assert client.post(url, headers=auth(people["admin"])).status_code == 409  # sent: nothing waits any more
        with Session(hub_env) as session:
            assert session.exec(select(OutboxJob)).all() == []
        consumer = jobs.start_embedded_consumer(workers=1, periodic=False)
        try:
            wait_for(hub_env, submission["id"], SubmissionStatus.evaluated)
        finally:
            consumer.stop(graceful=True)
    assert scoring_calls == [submission["id"]]


def test_two_jobs_for_one_submission_score_it_once(hub_env, people, scoring_calls):
    """The evaluation claims the submission with a conditional update, so a job sent twice runs once."""
    with TestClient(create_app()) as client:
        [submission] = post(client, people["owner"]).json()
    with Session(hub_env) as session:
        row = session.get(Submission, submission["id"])
        row.status = SubmissionStatus.approved
        session.commit()
    first = evaluation.EvaluationRun(hub_env, get_storage(), submission["id"])
    second = evaluation.EvaluationRun(hub_env, get_storage(), submission["id"])
    assert first.claim() is True
    assert second.claim() is False  # fresh heartbeat: someone is on it
    assert second.run() == SubmissionStatus.evaluating
    assert scoring_calls == []
