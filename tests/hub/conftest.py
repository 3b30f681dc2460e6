"""Hub fixtures: a fresh data folder, migrated SQLite database and local storage for each test."""

from __future__ import annotations

import pytest

from hub import db, jobs, settings, storage


def _clear_caches() -> None:
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, jobs.get_huey, jobs.tasks):
        cached.cache_clear()


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """HUB_DATA_DIR in a temporary folder, schema migrated; yields the engine."""
    from hub.migrate import upgrade

    monkeypatch.setenv("HUB_DATA_DIR", str(tmp_path / "hub-data"))
    for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        monkeypatch.delenv(name, raising=False)
    _clear_caches()
    upgrade()
    yield db.get_engine()
    db.get_engine().dispose()
    _clear_caches()
