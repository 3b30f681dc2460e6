"""Python's garbage collector in a web process: the objects of its start-up kept out of every later collection.

A web process starts with some 300,000 objects that live as long as it does (modules, classes, the app, its routes).
CPython's full collection walks all of them; under a burst of requests one ran every few seconds, because requests in
flight across a young collection are promoted to the oldest generation, and each took 100-150 ms of the event loop
(measured with gc.callbacks on the bench database: at 50 concurrent clients, the p99 of every page was a full
collection, 8 ms p50 against 145 ms p99). `gc.freeze()` after start-up moves them to a permanent generation that
collections skip: a full collection then walks only what was made since (on the bench, 11-17 ms every few seconds
instead of 100-150 ms, and a p99 of 17 ms). Garbage cycles are collected first, so nothing collectable is frozen. Once
per process: a process that builds several apps (the tests) freezes only the first one's start-up.
"""

from __future__ import annotations

import gc


def settle_long_lived_objects() -> int:
    """Collect, then freeze what survives (the process's start-up objects), once per process; the number frozen."""
    if gc.get_freeze_count() == 0:
        gc.collect()
        gc.freeze()
    return gc.get_freeze_count()
