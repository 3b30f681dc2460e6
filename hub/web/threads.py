"""As many request threads as pooled database connections, so that no request thread waits on the pool.

Starlette runs every sync route on anyio's default thread limiter (40 threads). With fewer pooled connections (10 + 10
by default), the extra threads wait inside SQLAlchemy's pool, whose waiters are not served in order: a connection
given back goes to whichever thread asks first, so under a burst an unlucky request waits out the whole pool timeout
(scripts/bench_ratings.py: p99 of 30 s for claims and submits, once every claim for a whole run). With one thread per
connection, requests beyond that wait for a thread instead, in arrival order, and each thread finds a connection."""

from __future__ import annotations

import anyio.to_thread

from hub.settings import HubSettings


def pooled_connections(settings: HubSettings) -> int:
    return settings.db_pool_size + settings.db_max_overflow


def limit_request_threads(settings: HubSettings) -> int:
    """Size this event loop's default thread limiter to the connection pool; call it on the server's loop."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = pooled_connections(settings)
    return limiter.total_tokens
