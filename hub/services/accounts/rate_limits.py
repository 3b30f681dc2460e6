"""Rate limits against guessing and bulk sign-ups: failed logins per account and per client address, sign-ups,
unknown API tokens and new cohort raters per client address.

Counting is done by the `limits` library (fixed windows) in a store every server process shares: the queue's Redis
when `HUB_QUEUE_URL` is redis://, otherwise a small SQLite file in data_dir (`SQLiteStorage` below: one UPSERT per
hit, atomic across processes), or `HUB_RATE_LIMIT_URL` (e.g. memory:// for a single process). The limits are
settings in `limits` notation (`10/15 minutes`, several joined by `;`).

A store that cannot be reached (Redis down) never makes a request fail with 500: the limits on token use and new
raters are then skipped (a warning, counted in `unavailable_counts`), while login and sign-up, whose limits are what
stops password guessing and bulk accounts, answer 503 with Retry-After until the store is back.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from limits import RateLimitItem, parse_many
from limits.errors import StorageError
from limits.storage import Storage, storage_from_string
from limits.strategies import FixedWindowRateLimiter

from hub.errors import ServiceUnavailable, TooManyRequests
from hub.settings import get_settings

log = logging.getLogger(__name__)
Result = TypeVar("Result")
STORE_TIMEOUT_SECONDS = 1.0  # a Redis that does not answer (not just refuses) costs a request at most this
STORE_RETRY_AFTER_SECONDS = 30
_unavailable: Counter[str] = Counter()


class LimitsUnavailable(ServiceUnavailable):
    """The rate limit store cannot be reached, and the limit must not be skipped (login, sign-up)."""

    retry_after = STORE_RETRY_AFTER_SECONDS


_unavailable_lock = threading.Lock()


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
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: no fsync per hit (a crash may lose the last counts only)
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
    options: dict[str, Any] = {"wrap_exceptions": True}  # every store error is a limits StorageError
    if url.startswith(("redis://", "rediss://")):
        options |= {
            "key_prefix": prefix,
            "socket_connect_timeout": STORE_TIMEOUT_SECONDS,
            "socket_timeout": STORE_TIMEOUT_SECONDS,
        }
    return FixedWindowRateLimiter(storage_from_string(url, **options))


_LIMITER_MADE = threading.Lock()


def limiter() -> FixedWindowRateLimiter:
    """The limiter over the shared store (one per store URL and key prefix in this process). Made under a lock: the
    first requests of a process arrive together, and racing SQLite stores setting up their file got "database is
    locked"."""
    with _LIMITER_MADE:
        return _limiter(storage_url(), get_settings().rate_limit_prefix)


@dataclass(frozen=True)
class Rule:
    """What is counted (`setting` names its limits in HubSettings) and what the refused caller is told.
    `fail_open`: while the store is unreachable the event is let through uncounted (else: 503)."""

    name: str
    setting: str
    message: str
    fail_open: bool = False

    def items(self) -> list[RateLimitItem]:
        return parse_many(getattr(get_settings(), self.setting))


LOGIN_ACCOUNT = Rule("login-account", "login_failures_per_account", "too many failed logins for this account")
LOGIN_CLIENT = Rule("login-client", "login_failures_per_client", "too many failed logins from your address")
SIGNUP_CLIENT = Rule("signup-client", "signups_per_client", "too many sign-ups from your address")
TOKEN_CLIENT = Rule(
    "token-client", "token_failures_per_client", "too many invalid API tokens from your address", fail_open=True
)
RESET_CLIENT = Rule("reset-client", "password_resets_per_client", "too many password-reset requests from your address")
RATER_CLIENT = Rule("rater-client", "new_raters_per_client", "too many new raters from your address", fail_open=True)
STUDY_IMAGE_CLIENT = Rule(
    "study-image-client", "study_images_per_client", "too many images uploaded from your address", fail_open=True
)


def unavailable_counts() -> Counter[str]:
    """How often each rule was skipped in this process because its store could not be reached."""
    with _unavailable_lock:
        return Counter({rule.name: 0 for rule in (TOKEN_CLIENT, RATER_CLIENT)}) + _unavailable


def _guarded(rule: Rule, count: Callable[..., Result], *args: Any) -> Result | None:
    """`count(*args)` against the store; if the store is unreachable, let a fail-open rule through (None) or refuse."""
    try:
        return count(*args)
    except StorageError as exc:
        if not rule.fail_open:
            log.warning("rate limit store unavailable, %s refused: %s", rule.name, exc.storage_error)
            raise LimitsUnavailable("the hub cannot check its rate limits just now; try again in a moment") from exc
        with _unavailable_lock:
            _unavailable[rule.name] += 1
            skipped = _unavailable[rule.name]
        if skipped == 1 or skipped % 100 == 0:  # a warning, not one per request while the store is down
            log.warning(
                "rate limit store unavailable, %s not counted (%d times): %s", rule.name, skipped, exc.storage_error
            )
        return None


def _key(value: str) -> str:
    """Counters are keyed by a hash: no email address or IP address is written to the store in clear."""
    return hashlib.sha256(value.strip().lower().encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _refuse(rule: Rule, item: RateLimitItem, key: str) -> TooManyRequests:
    try:
        wait = max(1, math.ceil(limiter().get_window_stats(item, rule.name, key).reset_time - time.time()))
    except StorageError:  # the store went away just now: the window's whole length
        wait = item.get_expiry()
    when = f"{math.ceil(wait / 60)} minute(s)" if wait > 90 else f"{wait} seconds"
    return TooManyRequests(f"{rule.message}; try again in {when}", retry_after=wait)


def check(rule: Rule, value: str) -> None:
    """Raise TooManyRequests (with the seconds to wait) if any limit of `rule` is used up for `value`."""
    key = _key(value)
    for item in rule.items():
        if _guarded(rule, limiter().test, item, rule.name, key) is False:
            raise _refuse(rule, item, key)


def hit(rule: Rule, value: str) -> None:
    """Count one event (a failure, a sign-up) against every limit of `rule` for `value`."""
    key = _key(value)
    for item in rule.items():
        _guarded(rule, limiter().hit, item, rule.name, key)


def take(rule: Rule, value: str) -> None:
    """Count one event and refuse it if that goes over a limit (for events limited whether they succeed or not)."""
    key = _key(value)
    for item in rule.items():
        if _guarded(rule, limiter().hit, item, rule.name, key) is False:
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
