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

import anyio.to_thread

from hub.settings import HubSettings


def request_threads(settings: HubSettings) -> int:
    """The pooled connections less those kept for closing sessions (one thread at least)."""
    connections = settings.db_pool_size + settings.db_max_overflow
    return max(1, connections - max(1, connections // 5))


def limit_request_threads(settings: HubSettings) -> int:
    """Size this event loop's default thread limiter to the connection pool; call it on the server's loop."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = request_threads(settings)
    return limiter.total_tokens
