"""As many request threads as pooled database connections, so that no request thread waits on the pool.

Starlette runs every sync route on anyio's default thread limiter (40 threads). With fewer pooled connections (10 + 10
by default), the extra threads wait inside SQLAlchemy's pool, whose waiters are not served in order: a connection
given back goes to whichever thread asks first, so under a burst an unlucky request waits out the whole pool timeout
(scripts/bench_ratings.py: p99 of 30 s for claims and submits, once every claim for a whole run). With one thread per
connection, requests beyond that wait for a thread instead, in arrival order, and each thread finds a connection.

A request's session is closed just after its route returns, on another thread (FastAPI's dependency exit), so for a
moment a connection is still out while the thread already serves the next request: a fifth of the connections (at
least one) are kept for such closing sessions."""

from __future__ import annotations

from typing import TypeVar

import anyio.to_thread
from sqlmodel import Session

from hub.settings import HubSettings

Answer = TypeVar("Answer")


def request_threads(settings: HubSettings) -> int:
    """The pooled connections less those kept for closing sessions (one thread at least)."""
    connections = settings.db_pool_size + settings.db_max_overflow
    return max(1, connections - max(1, connections // 5))


def limit_request_threads(settings: HubSettings) -> int:
    """Size this event loop's default thread limiter to the connection pool; call it on the server's loop."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = request_threads(settings)
    return limiter.total_tokens


def release_connection(session: Session, answer: Answer) -> Answer:
    """End the request session's transaction, so its connection goes back to the pool, and return the route's answer.

    FastAPI checks a sync route's answer against its return type on another thread hop, and closes the request session
    only after that: a request that still holds its connection then waits for a thread. Under a burst every thread was
    taken by a request waiting for a connection, and every connection by a request waiting for a thread, until the
    pool timeout (scripts/bench_ratings.py: p99 of 30 s, once no judgement for a whole run). The hot routes (claim,
    submit) end their transaction first."""
    session.commit()
    return answer
