"""Anonymous views of cached pages are answered before routing (read_cache.CachedPageShortcut): the same answer as
the route's, headers included, without running the route; fresh after a write; never for signed-in visitors."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from hub.models.data_version import bump
from hub.services.publishing.read_side import PAGES
from hub.web import read_cache
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.read_side.test_cached_pages import PUBLIC_URLS

SAME_HEADERS = ("etag", "last-modified", "cache-control", "vary", "content-type", "content-encoding")


def _header(reply, name: str):
    """A header's value; Vary as a set (the session middleware adds Cookie again when a request sends a cookie)."""
    value = reply.headers.get(name)
    return {part.strip() for part in value.split(",")} if name == "vary" and value else value


@pytest.fixture
def counted(hub_env, baselines, people, monkeypatch):
    """A client, and how many requests reached a cached route (its `_respond`) so far."""
    calls = []
    respond = read_cache._respond

    def counting(*args, **kwargs):
        calls.append(args[1])
        return respond(*args, **kwargs)

    monkeypatch.setattr(read_cache, "_respond", counting)
    PAGES.clear()
    with TestClient(create_app()) as client:
        yield client, calls, people


@pytest.mark.parametrize("gzip", [False, True])
def test_anonymous_views_skip_the_route_and_get_its_answer(counted, gzip):
    client, calls, _ = counted
    accept = {"Accept-Encoding": "gzip" if gzip else "identity"}
    for url in PUBLIC_URLS:
        client.cookies.clear()
        built = client.get(url, headers=accept)
        assert built.status_code == 200, (url, built.text)
        reached = len(calls)
        client.cookies.clear()
        short = client.get(url, headers=accept)
        assert len(calls) == reached or url.startswith("/api/downloads"), url  # downloads: their own async route
        routed = client.get(url, headers={**accept, "Cookie": "unrelated=1"})  # a cookie: through the route
        assert short.status_code == routed.status_code == 200
        assert short.content == routed.content == built.content, url
        for name in (*SAME_HEADERS, "content-security-policy", "x-frame-options"):
            assert _header(short, name) == _header(routed, name), (url, name)
        client.cookies.clear()
        assert client.get(url, headers={"If-None-Match": short.headers["etag"]}).status_code == 304


def test_the_next_anonymous_view_after_a_write_is_built_afresh(counted, hub_env):
    client, calls, _ = counted
    url = PUBLIC_URLS[0]
    first = client.get(url)
    with Session(hub_env) as session:
        session.connection()  # a transaction, whose commit makes the bump
        bump(session)
        session.commit()
    client.cookies.clear()
    reached = len(calls)
    after = client.get(url)
    assert len(calls) == reached + 1 and after.headers["etag"] != first.headers["etag"]


def test_signed_in_visitors_are_never_answered_before_routing(counted):
    client, calls, people = counted
    client.cookies.clear()
    client.get("/")  # kept for anonymous visitors
    reached = len(calls)
    signed_in = client.get("/", headers=auth(people["owner"]))
    assert signed_in.status_code == 200 and "etag" not in signed_in.headers
    assert len(calls) == reached  # built by the route for them, not from the cache (the wrapper skips _respond)
