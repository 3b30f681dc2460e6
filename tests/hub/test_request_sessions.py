"""A request holds a pooled connection only while one of its threads runs (hub/web/threads.py), on every route.

FastAPI runs a sync route in several thread hops (its dependencies, the route, the check of its answer). A request
whose session kept its connection between hops waited for a thread while holding it; with one thread and one
connection the next request took the thread and waited for that connection until the pool timeout (503)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import anyio.to_thread
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from hub import db, settings
from hub.web.app import create_app
from hub.web.threads import RequestSessionRoute
from tests.hub.conftest import auth

# Ordinary database routes: a token or an anonymous viewer (the optional_user hop), JSON answers checked against
# their return type (a third hop) and pages.
PATHS = ["/api/overview", "/api/experiments", "/api/systems/1", "/", "/leaderboards/hub-open-v1", "/datasets"]


def test_one_thread_and_one_connection_serve_concurrent_requests_to_every_kind_of_route(people, monkeypatch):
    monkeypatch.setenv("HUB_DB_POOL_SIZE", "1")
    monkeypatch.setenv("HUB_DB_MAX_OVERFLOW", "0")
    monkeypatch.setenv("HUB_DB_POOL_TIMEOUT", "1")
    settings.get_settings.cache_clear()
    db.get_engine.cache_clear()
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        assert client.portal.call(lambda: anyio.to_thread.current_default_thread_limiter().total_tokens) == 1

        def get(n: int) -> tuple[str, int]:
            path = PATHS[n % len(PATHS)]
            headers = auth(people["owner"]) if n % 2 else {}
            return path, client.get(path, headers=headers).status_code

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(get, range(4 * len(PATHS))))
    refused = [(path, status) for path, status in answers if status not in (200, 404)]
    assert not refused, refused
    assert db.get_engine().pool.checkedout() == 0


def _api_routes(routes: list) -> list[APIRoute]:
    """The app's routes, including those of included routers (kept in their router by FastAPI)."""
    found = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):
            found += _api_routes(route.original_router.routes)
    return found


def test_every_route_of_the_app_ends_its_session_in_its_own_thread(hub_env):
    routes = _api_routes(create_app().routes)
    assert routes and all(isinstance(route, RequestSessionRoute) for route in routes), [
        route.path for route in routes if not isinstance(route, RequestSessionRoute)
    ]
