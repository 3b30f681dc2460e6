"""A SQLite cache of endpoint calls keyed by the sha256 of the canonical request (URL and body, never the key)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.settings import get_settings

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_used_at REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
)
"""


def default_cache_path() -> Path:
    return get_settings().home / "llm_cache.sqlite"


def request_key(url: str, body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the full request: URL and body (the key travels in a header, not here)."""
    canonical = json.dumps({"url": url, "body": body}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    path: str
    entries: int
    bytes: int
    hits: int
    oldest: float | None
    newest: float | None
    by_model: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entries": self.entries,
            "bytes": self.bytes,
            "hits": self.hits,
            "oldest": self.oldest,
            "newest": self.newest,
            "by_model": self.by_model,
        }


class CallCache:
    """Thread-safe; one row per distinct request. A re-run of the same requests is answered from here for free."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(SCHEMA)

    def get(self, url: str, body: dict[str, Any]) -> dict[str, Any] | None:
        key = request_key(url, body)
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE calls SET hits = hits + 1, last_used_at = ? WHERE key = ?", (time.time(), key))
        return json.loads(row[0])

    def put(self, url: str, body: dict[str, Any], response: dict[str, Any]) -> None:
        key = request_key(url, body)
        now = time.time()
        request = json.dumps({"url": url, "body": body}, sort_keys=True, ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls (key, url, model, request, response, created_at, last_used_at, hits) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                (key, url, str(body.get("model", "")), request, json.dumps(response, ensure_ascii=False), now, now),
            )

    def stats(self) -> CacheStats:
        with self._lock:
            entries, hits, oldest, newest = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(hits), 0), MIN(created_at), MAX(created_at) FROM calls"
            ).fetchone()
            by_model = dict(self._db.execute("SELECT model, COUNT(*) FROM calls GROUP BY model ORDER BY model"))
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(str(self.path), entries, size, hits, oldest, newest, by_model)

    def prune(self, *, older_than_days: float | None = None) -> int:
        """Delete entries last used more than `older_than_days` ago (all entries when None); returns how many."""
        with self._lock:
            if older_than_days is None:
                removed = self._db.execute("DELETE FROM calls").rowcount
            else:
                cutoff = time.time() - older_than_days * 86_400
                removed = self._db.execute("DELETE FROM calls WHERE last_used_at < ?", (cutoff,)).rowcount
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
        return removed

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
