"""Rate limits against guessing and bulk sign-ups: failed logins per account and per client address, sign-ups,
unknown API tokens and new cohort raters per client address.

Counting is done by the `limits` library (fixed windows) in a store every server process shares: the queue's Redis
when `HUB_QUEUE_URL` is redis://, otherwise a small SQLite file in data_dir (`SQLiteStorage` below: one UPSERT per
hit, atomic across processes), or `HUB_RATE_LIMIT_URL` (e.g. memory:// for a single process). The limits are
settings in `limits` notation (`10/15 minutes`, several joined by `;`).
"""

from __future__ import annotations

import hashlib
import math
import random
import sqlite3
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from limits import RateLimitItem, parse_many
from limits.storage import Storage, storage_from_string
from limits.strategies import FixedWindowRateLimiter

from hub.errors import TooManyRequests
from hub.settings import get_settings


class SQLiteStorage(Storage):
    """Fixed-window counters in a SQLite file: one row per key (hits, expiry). Each increment is a single UPSERT,
    so processes and threads sharing the file never lose a hit; expired rows are swept now and then."""

    STORAGE_SCHEME: ClassVar[list[str]] = ["hub+sqlite"]
    SWEEP_CHANCE = 0.01

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: Any):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.path = Path((uri or "").split("://", 1)[-1])
        self._local = threading.local()
        with self._connection() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS counter "
                "(key TEXT PRIMARY KEY, hits INTEGER NOT NULL, expires_at REAL NOT NULL)"
            )

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout=10000")
            self._local.db = db
        return db

    @property
    def base_exceptions(self) -> type[Exception]:
        return sqlite3.Error

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        db = self._connection()
        (hits,) = db.execute(
            "INSERT INTO counter (key, hits, expires_at) VALUES (:key, :amount, :expires) "
            "ON CONFLICT (key) DO UPDATE SET "
            "hits = CASE WHEN expires_at <= :now THEN :amount ELSE hits + :amount END, "
            "expires_at = CASE WHEN expires_at <= :now THEN :expires ELSE expires_at END "
            "RETURNING hits",
            {"key": key, "amount": amount, "expires": now + expiry, "now": now},
        ).fetchone()
        if hits == amount and random.random() < self.SWEEP_CHANCE:  # a new window: now and then drop dead rows
            db.execute("DELETE FROM counter WHERE expires_at <= ?", (now,))
        return int(hits)

    def _live(self, key: str) -> tuple[int, float] | None:
        now = time.time()
        row = (
            self._connection()
            .execute("SELECT hits, expires_at FROM counter WHERE key = ? AND expires_at > ?", (key, now))
            .fetchone()
        )
        return (int(row[0]), float(row[1])) if row else None

    def get(self, key: str) -> int:
        live = self._live(key)
        return live[0] if live else 0

    def get_expiry(self, key: str) -> float:
        live = self._live(key)
        return live[1] if live else time.time()

    def check(self) -> bool:
        return self._connection().execute("SELECT 1").fetchone() == (1,)

    def reset(self) -> int | None:
        return self._connection().execute("DELETE FROM counter").rowcount

    def clear(self, key: str) -> None:
        self._connection().execute("DELETE FROM counter WHERE key = ?", (key,))


def storage_url() -> str:
    settings = get_settings()
    if settings.rate_limit_url:
        return settings.rate_limit_url
    if settings.queue_url.startswith(("redis://", "rediss://")):
        return settings.queue_url
    return f"hub+sqlite://{settings.data_dir / 'rate_limits.db'}"


@lru_cache(maxsize=8)
def _limiter(url: str, prefix: str) -> FixedWindowRateLimiter:
    options = {"key_prefix": prefix} if url.startswith(("redis://", "rediss://")) else {}
    return FixedWindowRateLimiter(storage_from_string(url, **options))


def limiter() -> FixedWindowRateLimiter:
    """The limiter over the shared store (one per store URL and key prefix in this process)."""
    return _limiter(storage_url(), get_settings().rate_limit_prefix)


@dataclass(frozen=True)
class Rule:
    """What is counted (`setting` names its limits in HubSettings) and what the refused caller is told."""

    name: str
    setting: str
    message: str

    def items(self) -> list[RateLimitItem]:
        return parse_many(getattr(get_settings(), self.setting))


LOGIN_ACCOUNT = Rule("login-account", "login_failures_per_account", "too many failed logins for this account")
LOGIN_CLIENT = Rule("login-client", "login_failures_per_client", "too many failed logins from your address")
SIGNUP_CLIENT = Rule("signup-client", "signups_per_client", "too many sign-ups from your address")
TOKEN_CLIENT = Rule("token-client", "token_failures_per_client", "too many invalid API tokens from your address")
RATER_CLIENT = Rule("rater-client", "new_raters_per_client", "too many new raters from your address")


def _key(value: str) -> str:
    """Counters are keyed by a hash: no email address or IP address is written to the store in clear."""
    return hashlib.sha256(value.strip().lower().encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _refuse(rule: Rule, item: RateLimitItem, key: str) -> TooManyRequests:
    reset_at = limiter().get_window_stats(item, rule.name, key).reset_time
    wait = max(1, math.ceil(reset_at - time.time()))
    when = f"{math.ceil(wait / 60)} minute(s)" if wait > 90 else f"{wait} seconds"
    return TooManyRequests(f"{rule.message}; try again in {when}", retry_after=wait)


def check(rule: Rule, value: str) -> None:
    """Raise TooManyRequests (with the seconds to wait) if any limit of `rule` is used up for `value`."""
    key = _key(value)
    for item in rule.items():
        if not limiter().test(item, rule.name, key):
            raise _refuse(rule, item, key)


def hit(rule: Rule, value: str) -> None:
    """Count one event (a failure, a sign-up) against every limit of `rule` for `value`."""
    key = _key(value)
    for item in rule.items():
        limiter().hit(item, rule.name, key)


def take(rule: Rule, value: str) -> None:
    """Count one event and refuse it if that goes over a limit (for events limited whether they succeed or not)."""
    key = _key(value)
    for item in rule.items():
        if not limiter().hit(item, rule.name, key):
            raise _refuse(rule, item, key)


def describe(rule: Rule) -> str:
    """The limits of `rule` in words, for the pages that say what happens: "10 in 15 minutes"."""

    def one(item: RateLimitItem) -> str:
        unit = item.GRANULARITY.name + ("s" if item.multiples != 1 else "")
        return f"{item.amount} in {item.multiples if item.multiples != 1 else 'one'} {unit}"

    return " or ".join(one(item) for item in rule.items())


def client_address(request: Any) -> str:
    """The caller's address as the server sees it (behind a proxy, run uvicorn with --proxy-headers)."""
    return request.client.host if request.client else "unknown"
