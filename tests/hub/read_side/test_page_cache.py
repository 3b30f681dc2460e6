"""The page cache: bounded by entries and bytes, newest version only, and one build per page in a burst."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import httpx

from hub.services.publishing import leaderboard
from hub.services.publishing.read_side import PAGES, CachedPage, PageCache, Version
from tests.hub.conftest import DATASET
from tests.hub.live_server import live_hub

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def page(n: int) -> CachedPage:
    return CachedPage(body=b"x" * n, media_type="text/html", headers=())


def test_entries_and_bytes_are_bounded_least_recently_used_first():
    cache = PageCache(max_entries=3, max_bytes=100)
    v = Version(1, T0)
    for key in "abc":
        cache.put(key, v, page(10))
    assert cache.get("a", v) is not None  # a is now the most recent
    cache.put("d", v, page(10))
    assert cache.get("b", v) is None and len(cache) == 3
    cache.put("e", v, page(90))
    assert len(cache) == 2 and cache.get("d", v) and cache.get("e", v)  # c and a went: 10 + 90 <= 100 bytes
    cache.put("huge", v, page(101))
    assert cache.get("huge", v) is None


def test_only_the_newest_version_is_kept_and_older_builds_are_dropped():
    cache = PageCache()
    old, new = Version(4, T0), Version(5, T0 + timedelta(seconds=1))
    cache.put("a", old, page(1))
    cache.put("a", new, page(2))
    assert cache.get("a", old) is None and cache.get("a", new).body == b"xx"
    cache.put("b", old, page(3))  # a slow build of the older version, finishing late
    assert cache.get("b", old) is None and len(cache) == 1
    other_database = Version(5, T0 + timedelta(seconds=7))  # same number, another database: not the same version
    assert cache.get("a", other_database) is None


def test_a_burst_after_a_write_builds_each_page_once(hub_env, baselines, monkeypatch):
    builds = []
    real = leaderboard.leaderboard

    def counted(*args, **kwargs):
        builds.append(1)
        time.sleep(0.3)  # widens the window in which the burst arrives
        return real(*args, **kwargs)

    monkeypatch.setattr(leaderboard, "leaderboard", counted)
    PAGES.clear()
    with live_hub() as (host, port):
        url = f"http://{host}:{port}/api/leaderboards/{DATASET}"
        bodies: list[bytes] = []

        def visit():
            bodies.append(httpx.get(url, timeout=60).content)

        threads = [threading.Thread(target=visit) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(bodies) == 8 and len(set(bodies)) == 1
    assert len(builds) == 1
