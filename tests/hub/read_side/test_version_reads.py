"""The data version for requests on the event loop (hub.web.version_reads): each caller gets a read that began after
it called, callers waiting together share one read, a failed read fails only the callers that waited for it; and
the web process's start-up objects are frozen out of later garbage collections (hub.web.collector)."""

from __future__ import annotations

import asyncio
import gc
import threading
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from hub.services.publishing.read_side import Version
from hub.web import version_reads
from hub.web.app import create_app
from hub.web.collector import settle_long_lived_objects


class GatedReads:
    """A stand-in for the database read (it runs in a worker thread): each read waits for its gate, then returns the
    next version number, or raises when told to."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.gates: list[threading.Event] = []
        self.failing: set[int] = set()
        self.lock = threading.Lock()

    def __call__(self) -> Version:
        with self.lock:
            number = len(self.started) + 1
            self.started.append(number)
            gate = threading.Event()
            self.gates.append(gate)
        gate.wait(10)
        if number in self.failing:
            raise RuntimeError(f"read {number} failed")
        return Version(number, datetime(2026, 1, 1, tzinfo=UTC))

    def release(self, number: int) -> None:
        self.gates[number - 1].set()


async def _until(condition, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


@pytest.fixture
def reads(monkeypatch):
    gated = GatedReads()
    monkeypatch.setattr(version_reads, "read_version_now", gated)
    return gated


def test_callers_arriving_during_a_read_share_the_next_one(reads):
    async def scenario():
        first = asyncio.create_task(version_reads.read_version())
        await _until(lambda: reads.started == [1])
        waiting = [asyncio.create_task(version_reads.read_version()) for _ in range(20)]
        await asyncio.sleep(0.05)
        assert reads.started == [1]  # they wait for the read in flight to end: it began before they arrived
        reads.release(1)
        assert (await first).number == 1
        await _until(lambda: reads.started == [1, 2])
        reads.release(2)
        assert {(await task).number for task in waiting} == {2}  # one read, begun after every one of them arrived
        after = asyncio.create_task(version_reads.read_version())
        await _until(lambda: len(reads.started) == 3)
        reads.release(3)
        assert (await after).number == 3  # a caller after the reads ended gets a read of its own
        assert reads.started == [1, 2, 3]

    asyncio.run(scenario())


def test_a_failed_read_fails_only_its_callers_and_reads_go_on(reads):
    reads.failing.add(1)

    async def scenario():
        doomed = [asyncio.create_task(version_reads.read_version()) for _ in range(3)]
        await _until(lambda: reads.started == [1])
        reads.release(1)
        for task in doomed:
            with pytest.raises(RuntimeError, match="read 1 failed"):
                await task
        later = asyncio.create_task(version_reads.read_version())
        await _until(lambda: reads.started == [1, 2])
        reads.release(2)
        assert (await later).number == 2

    asyncio.run(scenario())


def test_a_caller_that_goes_away_does_not_cancel_the_others_read(reads):
    async def scenario():
        leaving = asyncio.create_task(version_reads.read_version())
        staying = asyncio.create_task(version_reads.read_version())
        await _until(lambda: reads.started == [1])
        leaving.cancel()
        await asyncio.sleep(0.01)
        reads.release(1)
        assert (await staying).number == 1
        assert leaving.cancelled()

    asyncio.run(scenario())


def test_the_version_is_read_from_the_database(hub_env):
    from sqlmodel import Session

    from hub.models.data_version import bump

    before = version_reads.read_version_now()
    with Session(hub_env) as session:
        session.connection()
        bump(session)
        session.commit()
    assert asyncio.run(version_reads.read_version()).number == before.number + 1


def test_a_web_process_freezes_its_start_up_objects(hub_env):
    with TestClient(create_app()) as client:
        assert client.get("/static/app.css").status_code == 200
        frozen = gc.get_freeze_count()
    assert frozen > 10_000  # modules, classes, the app and its routes
    assert settle_long_lived_objects() <= frozen  # once per process: no more are frozen (some frozen ones died)
