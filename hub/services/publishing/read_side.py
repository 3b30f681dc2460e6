"""The public read side: view-models and rendered pages cached by (page, parameters, data version).

Every write that changes public data bumps the data version in its own transaction (hub.models.data_version: one
session hook; `bump(session)` for writes the ORM does not see). A public request reads the version once (a primary-key
read, `current`), and looks its page up under (key, version) in this process's LRU (`PAGES`); a miss builds the page
and keeps it. Several web processes stay correct because each reads the version from the shared database: the first
request after a write's commit sees a new version and builds afresh. Only what every visitor sees alike is cached
(anonymous requests, decided by the web layer, hub.web.read_cache); owners' and admins' views are built per request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, select
from sqlmodel import Session

from hub.models.data_version import GLOBAL_SCOPE, DataVersion

MAX_ENTRIES = 2_000
MAX_BYTES = 384 * 1024 * 1024  # per process
MAX_ENTRY_BYTES = 128 * 1024 * 1024  # larger answers (a big download) are built per request


@dataclass(frozen=True)
class Version:
    """A scope's version: the bump count and the bump's time. Both name it, so two databases (a restored backup, a
    test's fresh one) never share a version in one process's cache."""

    number: int
    changed_at: datetime  # UTC

    @property
    def tag(self) -> str:
        return f"{self.number}.{int(self.changed_at.timestamp() * 1_000_000):x}"

    def newer_than(self, other: Version) -> bool:
        return (self.number, self.changed_at) > (other.number, other.changed_at)


NO_VERSION = Version(-1, datetime(1970, 1, 1, tzinfo=UTC))


def current(session: Session | Connection, scope: str = GLOBAL_SCOPE) -> Version:
    """The scope's data version (one primary-key read, in a session or on a bare connection); version 0 when the row
    is missing."""
    table = DataVersion.__table__  # type: ignore[attr-defined]
    row = session.execute(select(table.c.version, table.c.changed_at).where(table.c.scope == scope)).first()
    if row is None:
        return Version(0, NO_VERSION.changed_at)
    changed_at = row.changed_at if row.changed_at.tzinfo else row.changed_at.replace(tzinfo=UTC)
    return Version(int(row.version), changed_at)


@dataclass(frozen=True)
class CachedPage:
    body: bytes
    media_type: str | None
    headers: tuple[tuple[str, str], ...]  # the built answer's own headers (pagination, filename, schema version)
    status_code: int = 200
    gzipped: bytes | None = None  # the body compressed once, for clients that accept gzip

    @property
    def size(self) -> int:
        return len(self.body) + len(self.gzipped or b"")


class PageCache:
    """A thread-safe LRU of CachedPage by (key, version), bounded by entries and bytes. Only the newest version seen
    is kept: a newer one drops every entry of the others at once (nobody asks for them again). A page may be kept
    with its `target` (the request's path and query), so a request can find its key before it is routed."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries: OrderedDict[str, CachedPage] = OrderedDict()
        self._keys: dict[str, str] = {}  # target -> key, for pages kept with their target
        self._bytes = 0
        self._version = NO_VERSION
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: str, version: Version) -> CachedPage | None:
        with self._lock:
            page = self._entries.get(key) if version == self._version else None
            if page is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return page

    def key_for(self, target: str) -> str | None:
        """The key of the page kept with this target (which may since have been dropped), else None."""
        return self._keys.get(target)

    def put(self, key: str, version: Version, page: CachedPage, target: str | None = None) -> None:
        if page.size > min(MAX_ENTRY_BYTES, self.max_bytes):
            return
        with self._lock:
            if version != self._version:
                if not version.newer_than(self._version):
                    return  # built from an older version than one already seen
                self._version = version
                self._entries.clear()
                self._bytes = 0
            if target is not None and len(self._keys) < 4 * self.max_entries:
                self._keys[target] = key
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._entries[key] = page
            self._bytes += page.size
            while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._keys.clear()
            self._bytes = 0
            self._version = NO_VERSION

    def __len__(self) -> int:
        return len(self._entries)


PAGES = PageCache()
