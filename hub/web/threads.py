"""Request threads and the request session's connection: a request holds a pooled connection only while one of its
threads runs, never while it waits for a thread (or for the client).

FastAPI runs a sync route in several thread hops, each waiting for anyio's default thread limiter: every sync
dependency (`optional_user` looks up the caller), the route itself, and the check of its answer against its return
type. A session left in a transaction at the end of one hop kept its connection while the request waited for the next
hop's thread; under a burst every thread was taken by a request waiting for a connection and every connection by a
request waiting for a thread, until the pool timeout (scripts/bench_ratings.py: 503s, p99 of 30 s). So every hop that
was given the request session ends its transaction in its own thread before the thread is given back: the route
(`RequestSessionRoute`, the route class of every router) and the dependencies that use the session
(`@ends_transaction`). The session's close at the end of the request (its own thread, no limiter) then finds no
connection to give back.

Request threads are as many as pooled connections: a thread that needs a connection finds one (every connection out
belongs to a running thread), and requests beyond that wait for a thread, in arrival order, not inside the pool, whose
waiters are not served in order."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session

from hub.settings import HubSettings

Call = TypeVar("Call", bound=Callable[..., Any])


def request_threads(settings: HubSettings) -> int:
    """One request thread per pooled connection."""
    return max(1, settings.db_pool_size + settings.db_max_overflow)


def limit_request_threads(settings: HubSettings) -> int:
    """Size this event loop's default thread limiter to the connection pool; call it on the server's loop."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = request_threads(settings)
    return limiter.total_tokens


def ends_transaction(call: Call) -> Call:
    """Wrap a sync route or dependency: when it returns or raises, every Session it was given ends its transaction
    (a rollback, as closing the session would: what a route committed is kept, what it left unsaved is not), so its
    connection goes back to the pool before the thread does. Objects stay attached and load again if read later."""
    if inspect.iscoroutinefunction(call) or inspect.isgeneratorfunction(call) or inspect.isasyncgenfunction(call):
        return call

    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        finally:
            for value in (*args, *kwargs.values()):
                if isinstance(value, Session):
                    value.rollback()

    return wrapper  # type: ignore[return-value]


class RequestSessionRoute(APIRoute):
    """The route class of every router: a sync route ends its request session's transaction in its own thread."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, ends_transaction(endpoint), **kwargs)
