"""The data version for requests on the event loop: read from the database after each request arrived, one read
shared by every request that arrived before it began.

A cached page may be served only at the version current when its request arrived (a write committed by any
process before then must show). Reading it once per request costs a database round trip and a thread hop per
request; under a burst most of a process's time went there. Here a request waits for the next read that begins
after it arrived: while one read runs, the requests arriving meanwhile gather on the one after it, so a process
reads at most twice at a time, however many requests wait, and every answer is still as fresh as a read of its own.
"""

from __future__ import annotations

import asyncio
import weakref

import anyio.to_thread

from hub.db import get_engine
from hub.services.publishing.read_side import Version, current


def read_version_now() -> Version:
    """One read of the global data version, on a pooled connection (no ORM session: half the cost)."""
    with get_engine().connect() as connection:
        return current(connection)


class _Reads:
    """One event loop's reads: the read gathering requests (not begun yet) and the task that runs them in turn."""

    def __init__(self) -> None:
        self.gathering: asyncio.Future[Version] | None = None
        self.runner: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while self.gathering is not None:
            future, self.gathering = self.gathering, None  # requests from now on gather on the next read
            try:
                future.set_result(await anyio.to_thread.run_sync(read_version_now))
            except Exception as error:  # every request that waited on this read gets the database's error
                future.set_exception(error)
        self.runner = None


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Reads] = weakref.WeakKeyDictionary()


async def read_version() -> Version:
    """The data version, read after this call began (shared with the other callers waiting for the same read)."""
    loop = asyncio.get_running_loop()
    reads = _BY_LOOP.get(loop)
    if reads is None:
        reads = _BY_LOOP[loop] = _Reads()
    if reads.gathering is None:
        reads.gathering = loop.create_future()
    future = reads.gathering
    if reads.runner is None:
        reads.runner = loop.create_task(reads.run())
    return await asyncio.shield(future)  # a caller that goes away does not cancel the others' read
