"""What stalled the rating path under a burst (scripts/bench_ratings.py), held as structure rather than timed:

- request threads waiting inside the connection pool, whose waiters are not served in order, so some waited out its
  30 s timeout: now one request thread per pooled connection, and a pool timeout of 2 s (a setting) after which the
  request answers 503 with Retry-After;
- every claim queueing on the row lock of the same task (started tasks first) behind a claim whose thread is slow:
  now a claim takes a task no other claim holds (SKIP LOCKED) and never waits for another claim's lock while one is
  free."""

from __future__ import annotations

import anyio.to_thread
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import db, settings
from hub.models import Experiment, Task
from hub.services.human import assignments, raters
from hub.web.app import create_app
from tests.hub.conftest import new_experiment
from tests.hub.test_rating_race import _admin_and_baselines, clear_caches, fresh_database


def test_request_threads_never_outnumber_pooled_connections(hub_env, monkeypatch):
    monkeypatch.setenv("HUB_DB_POOL_SIZE", "3")
    monkeypatch.setenv("HUB_DB_MAX_OVERFLOW", "2")
    settings.get_settings.cache_clear()
    db.get_engine.cache_clear()
    with TestClient(create_app()) as client:
        threads = client.portal.call(lambda: anyio.to_thread.current_default_thread_limiter().total_tokens)
        assert client.get("/api/experiments").status_code == 200
    pool = db.get_engine().pool
    assert threads == pool.size() + pool._max_overflow == 5  # a thread ends its session's transaction itself
    assert pool.timeout() == settings.get_settings().db_pool_timeout == 2.0


def test_a_request_that_gets_no_connection_answers_503_with_retry_after(hub_env, monkeypatch):
    monkeypatch.setenv("HUB_DB_POOL_SIZE", "1")
    monkeypatch.setenv("HUB_DB_MAX_OVERFLOW", "0")
    monkeypatch.setenv("HUB_DB_POOL_TIMEOUT", "0.2")
    settings.get_settings.cache_clear()
    db.get_engine.cache_clear()
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        with db.get_engine().connect():  # something holds the only connection
            busy = client.get("/api/experiments")
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "2"
        assert client.get("/api/experiments").status_code == 200  # given back: served again


@pytest.fixture
def postgres_experiment(tmp_path):
    """(engine, experiment id) of a launched experiment on a fresh PostgreSQL database."""
    from hub.migrate import upgrade

    with fresh_database("postgresql", tmp_path) as url, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(tmp_path / "hub-data"))
        patch.setenv("HUB_DATABASE_URL", url)
        for name in ("HUB_STORAGE_URL", "HUB_QUEUE_URL"):
            patch.delenv(name, raising=False)
        clear_caches()
        upgrade()
        engine = db.make_engine(url, pool_size=4, max_overflow=0)
        try:
            admin, systems = _admin_and_baselines(engine)
            experiment = new_experiment(engine, admin, systems, raters_per_prompt=3)
            yield engine, experiment.id
        finally:
            engine.dispose()
            clear_caches()


def test_a_claim_takes_a_task_no_other_claim_holds_instead_of_waiting(postgres_experiment):
    engine, experiment_id = postgres_experiment
    with Session(engine) as holder, Session(engine) as claimer:
        # The task every claim goes for first, locked by a claim that has not committed yet (a slow thread).
        first = assignments._free_tasks(holder, experiment_id, -1, set(), None)[0]
        holder.execute(sa.text("SELECT id FROM task WHERE id = :t FOR UPDATE"), {"t": first})
        claimer.execute(sa.text("SET lock_timeout = '3s'"))  # waiting for the lock would fail here
        rater = raters.rater_for(claimer, "hub", "burst-rater")
        assignment = assignments.claim_task(claimer, claimer.get(Experiment, experiment_id), rater)
        assert assignment is not None and assignment.task_id != first
        holder.rollback()
    with Session(engine) as check:
        taken = {t.id: t.claimed for t in check.exec(select(Task).where(Task.experiment_id == experiment_id))}
    assert taken[first] == 0 and taken[assignment.task_id] == 1


def test_claims_and_submits_give_their_connection_back_before_the_answer_is_checked(
    hub_env, people, admin_user, baselines, monkeypatch
):
    """One thread and one connection: a claim that kept its connection while FastAPI checks its answer on a second
    thread hop would leave the next request (holding the thread) waiting for that connection until the pool timeout
    (503). Released first, every racing request is served."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.hub.conftest import auth, new_experiment

    monkeypatch.setenv("HUB_DB_POOL_SIZE", "1")
    monkeypatch.setenv("HUB_DB_MAX_OVERFLOW", "0")
    monkeypatch.setenv("HUB_DB_POOL_TIMEOUT", "1")
    monkeypatch.setenv("HUB_NEW_RATERS_PER_CLIENT", "1000/minute")
    settings.get_settings.cache_clear()
    db.get_engine.cache_clear()
    experiment = new_experiment(db.get_engine(), admin_user, baselines)
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        assert client.portal.call(lambda: anyio.to_thread.current_default_thread_limiter().total_tokens) == 1
        created = client.post(f"/api/experiments/{experiment.id}/invites", headers=auth(people["admin"]), json={})
        token = created.json()["token"]
        url = f"/api/rate/{token}/claim"
        with ThreadPoolExecutor(6) as pool:
            claims = list(pool.map(lambda i: client.post(url, params={"rater_label": f"r{i}"}), range(6)))
        assert [c.status_code for c in claims] == [200] * 6, [c.text for c in claims if c.status_code != 200]

        def submit(task):
            answers = {str(item["id"]): "left" for item in task["items"]}
            return client.post(
                f"/api/rate/{token}/assignments/{task['assignment_id']}", json={"key": task["key"], "choices": answers}
            )

        with ThreadPoolExecutor(6) as pool:
            submits = list(pool.map(submit, [c.json() for c in claims]))
        assert [s.status_code for s in submits] == [200] * 6, [s.text for s in submits if s.status_code != 200]
