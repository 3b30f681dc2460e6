"""A conversation set uploaded while the job queue (a real Redis) is down stays queued and is evaluated once the
sweep resends it; a duplicate job does nothing; an admin's re-run replaces the results instead of adding to them."""

from __future__ import annotations

import time
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlmodel import Session, col, func, select

from hub import jobs, queue
from hub.models import ConversationAggregate, ConversationScore, ConversationSet
from hub.models.common import utcnow
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.conversations.helpers import conversation_lines, jsonl, upload
from tests.hub.test_queue_outage import pytestmark, redis_queue  # noqa: F401 (skip without redis; the fixture)


def _state(engine, set_id: int) -> tuple[str, int, int, int]:
    with Session(engine) as session:
        row = session.get(ConversationSet, set_id)
        scores = session.exec(select(func.count()).select_from(ConversationScore)).one()
        groups = session.exec(select(func.count()).select_from(ConversationAggregate)).one()
        return row.status, row.attempts, scores, groups


def _wait(engine, set_id: int, status: str, attempts: int, timeout: float = 60) -> tuple[str, int, int, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _state(engine, set_id)
        if state[:2] == (status, attempts):
            return state
        time.sleep(0.1)
    raise AssertionError(f"conversation set {set_id} is {_state(engine, set_id)}")


def test_a_set_uploaded_while_the_queue_is_down_is_evaluated_once_when_it_is_back(
    hub_env,
    people,
    redis_queue,  # noqa: F811
):
    records = conversation_lines(5, seed=8)
    turns = sum(m["role"] in ("user", "assistant") for r in records for m in r["messages"])
    with TestClient(create_app()) as client:
        redis_queue.stop()
        created = upload(client, people["owner"], jsonl(records))
        assert created.status_code == 201, created.text  # stored and recorded; its job waits for the sweep
        set_id = created.json()["id"]
        assert _state(hub_env, set_id) == ("queued", 0, 0, 0)

        redis_queue.start()
        with Session(hub_env) as session:  # as if a minute had passed since the upload
            session.execute(
                update(ConversationSet)
                .where(col(ConversationSet.id) == set_id)
                .values(updated_at=utcnow() - timedelta(minutes=2))
            )
            session.commit()
        consumer = jobs.start_embedded_consumer(workers=2, periodic=False)
        try:
            jobs.requeue_stalled()  # the periodic sweep, run now
            *_, scores, groups = _wait(hub_env, set_id, "evaluated", 1)
            assert scores == turns + len(records) and groups > 0
            queue.enqueue(queue.EVALUATE_CONVERSATION_SET, set_id)  # a duplicate job: the set is not queued
            time.sleep(1.0)
            assert _state(hub_env, set_id) == ("evaluated", 1, scores, groups)

            assert (
                client.post(f"/api/admin/conversation-sets/{set_id}/rerun", headers=auth(people["owner"])).status_code
                == 403
            )
            rerun = client.post(f"/api/admin/conversation-sets/{set_id}/rerun", headers=auth(people["admin"]))
            assert rerun.status_code == 200, rerun.text
            assert _wait(hub_env, set_id, "evaluated", 2) == ("evaluated", 2, scores, groups)  # replaced, not added
        finally:
            consumer.stop(graceful=True)
