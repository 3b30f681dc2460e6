"""A job's loss is visible and its retry fenced, on one machine: a run whose worker was given up for lost (stale
heartbeat) writes nothing when it wakes up, the retry counts the lost worker, the API shows it; a slow run keeps its
heartbeat fresh from a thread of its own, so it is never taken for lost while it works."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import settings
from hub.models import Submission, SubmissionStatus, System, User
from hub.models.common import utcnow
from hub.services.submissions import evaluation
from hub.services.submissions.evaluation import EvaluationRun, stalled_submissions, this_worker
from hub.storage import get_storage
from tests.hub.conftest import auth
from tests.hub.test_evaluation_pipeline import make_submission, scores_of


@pytest.fixture
def dataset():
    from evaluation.dataset import load_dataset

    return load_dataset("hub-open-v1")


def submission(engine, submission_id: int) -> Submission:
    with Session(engine) as session:
        return session.get(Submission, submission_id)


def go_stale(engine, submission_id: int) -> None:
    with Session(engine) as session:
        session.get(Submission, submission_id).heartbeat_at = utcnow() - timedelta(minutes=10)
        session.commit()


def test_a_run_given_up_for_lost_writes_nothing_and_the_retry_counts_the_loss(hub_env, people, dataset):
    from hub.web.app import create_app

    submission_id = make_submission(hub_env, dataset, [p.references[0] for p in dataset.prompts])
    with Session(hub_env) as session:  # the owner's system
        system = session.get(System, submission(hub_env, submission_id).system_id)
        system.owner_id = session.exec(select(User.id).where(User.email == "owner@example.org")).one()
        session.commit()
    lost = EvaluationRun(hub_env, get_storage(), submission_id)
    assert lost.claim()
    report = lost._score(submission(hub_env, submission_id))
    go_stale(hub_env, submission_id)  # its worker stopped beating (killed, or paused past the limit)
    assert stalled_submissions(hub_env) == [submission_id]

    retry = EvaluationRun(hub_env, get_storage(), submission_id)
    assert retry.claim()
    taken = submission(hub_env, submission_id)
    assert (taken.attempts, taken.worker_losses, taken.worker_id) == (2, 1, this_worker())
    assert stalled_submissions(hub_env) == []

    with TestClient(create_app()) as client:
        shown = client.get(f"/api/submissions/{submission_id}", headers=auth(people["admin"])).json()["evaluation"]
        assert shown["retrying_after_worker_loss"] is True and shown["worker_losses"] == 1
        assert shown["worker_id"] == this_worker()
        # The owner sees the count, not the machine.
        owner = client.get(f"/api/submissions/{submission_id}", headers=auth(people["owner"])).json()["evaluation"]
        assert (owner["worker_losses"], owner["worker_id"]) == (1, None)

    # The lost run wakes up and tries to save: nothing is written, the retry's run is untouched.
    assert lost._save(report) == SubmissionStatus.evaluating
    assert scores_of(hub_env, submission_id) == {}
    assert lost._fail("late failure") == SubmissionStatus.evaluating
    assert submission(hub_env, submission_id).error is None

    assert retry._save(report) == SubmissionStatus.evaluated
    done = submission(hub_env, submission_id)
    assert (done.status, done.attempts, done.worker_losses) == (SubmissionStatus.evaluated, 2, 1)
    assert {s.signature for s in scores_of(hub_env, submission_id).values()} == {
        o.result.signature for o in report.outcomes if o.result is not None
    }


def test_a_slow_run_keeps_its_heartbeat_fresh_and_is_never_taken_for_lost(hub_env, dataset, monkeypatch):
    monkeypatch.setenv("HUB_STALLED_AFTER_SECONDS", "4")  # heartbeat every 1 s
    settings.get_settings.cache_clear()
    original = EvaluationRun._score

    def slow(self, job):  # no progress for 2 stall limits: without its heartbeat the run would look lost half-way
        time.sleep(8)
        return original(self, job)

    monkeypatch.setattr(EvaluationRun, "_score", slow)
    submission_id = make_submission(hub_env, dataset, [p.references[0] for p in dataset.prompts])
    outcome: list = []
    worker = threading.Thread(
        target=lambda: outcome.append(EvaluationRun(hub_env, get_storage(), submission_id).run()), daemon=True
    )
    worker.start()
    seen_stalled = []
    while worker.is_alive():
        seen_stalled += stalled_submissions(hub_env)
        time.sleep(0.25)
    settings.get_settings.cache_clear()
    assert outcome == [SubmissionStatus.evaluated]
    assert seen_stalled == []
    done = submission(hub_env, submission_id)
    assert (done.attempts, done.worker_losses) == (1, 0)
    assert evaluation.heartbeat_every() > 0
