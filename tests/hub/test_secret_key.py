"""The key that signs sessions and salts the public rater hashes is never a published default: without
HUB_SECRET_KEY each data folder gets its own random key, made once, private to its owner, and read back by every
later process; HUB_SECRET_KEY, when set, wins."""

from __future__ import annotations

import stat

from hub.settings import get_settings


def _key(monkeypatch, folder, env_key: str | None = None) -> str:
    monkeypatch.setenv("HUB_DATA_DIR", str(folder))
    if env_key is None:
        monkeypatch.delenv("HUB_SECRET_KEY", raising=False)
    else:
        monkeypatch.setenv("HUB_SECRET_KEY", env_key)
    get_settings.cache_clear()
    try:
        return get_settings().secret_key
    finally:
        get_settings.cache_clear()


def test_each_data_folder_gets_its_own_random_key_made_once(tmp_path, monkeypatch):
    first = _key(monkeypatch, tmp_path / "a")
    assert len(first) >= 43 and first != "dev-only-change-me"
    assert _key(monkeypatch, tmp_path / "a") == first  # a later process (or a restart) reads the same key
    assert stat.S_IMODE((tmp_path / "a" / "secret_key").stat().st_mode) == 0o600
    assert _key(monkeypatch, tmp_path / "b") != first
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["secret_key"]  # no staging file left behind


def test_the_configured_key_wins(tmp_path, monkeypatch):
    assert _key(monkeypatch, tmp_path, "a-long-configured-key") == "a-long-configured-key"
    assert not (tmp_path / "secret_key").exists()
