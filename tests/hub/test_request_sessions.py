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


def test_a_rating_form_waiting_for_a_connection_leaves_the_server_answering(people, admin_user, baselines, monkeypatch):
    """The rating page's form route is async (it reads the form first): its database work runs on a request thread,
    not on the event loop, so while it waits for a pooled connection the server answers other requests. Before, it
    blocked the event loop: nothing else was answered until its pool timeout."""
    import threading
    import time

    from tests.hub.conftest import new_experiment

    monkeypatch.setenv("HUB_DB_POOL_SIZE", "1")
    monkeypatch.setenv("HUB_DB_MAX_OVERFLOW", "0")
    monkeypatch.setenv("HUB_DB_POOL_TIMEOUT", "5")
    settings.get_settings.cache_clear()
    db.get_engine.cache_clear()
    experiment = new_experiment(db.get_engine(), admin_user, baselines)
    finished: list[str] = []
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        invite = client.post(f"/api/experiments/{experiment.id}/invites", headers=auth(people["admin"]), json={})
        token = invite.json()["token"]
        task = client.post(f"/api/rate/{token}/claim").json()
        form = {"assignment_id": str(task["assignment_id"]), "key": task["key"]}
        form |= {f"choice_{item['id']}": "left" for item in task["items"]}
        held = db.get_engine().connect()  # something holds the only connection
        held.exec_driver_sql("SELECT 1")
        answers: dict[str, int] = {}

        def submit_form() -> None:
            answers["form"] = client.post(f"/rate/{token}", data=form, headers={"accept": "text/html"}).status_code
            finished.append("form")

        limiter = client.portal.call(anyio.to_thread.current_default_thread_limiter)
        client.portal.call(setattr, limiter, "total_tokens", 4)  # a thread to spare: only the event loop is in question
        sender = threading.Thread(target=submit_form)
        sender.start()
        time.sleep(0.5)  # sequencing, not a measurement: let the form's request reach the pool first
        answers["datasets"] = client.get("/api/datasets").status_code  # needs no database: served meanwhile
        finished.append("datasets")
        held.close()  # the form's request gets the connection now
        sender.join(timeout=30)
    assert finished[0] == "datasets" and answers == {"datasets": 200, "form": 200}, (finished, answers)
