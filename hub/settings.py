"""The hub's settings: one class, read once from `HUB_*` environment variables (see .env.example)."""

from __future__ import annotations

import os
import secrets
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA = Path.home() / ".local" / "share" / "chateval-hub"


class HubSettings(BaseSettings):
    """Safe development defaults: one machine, zero services (SQLite, local files, SQLite job queue)."""

    model_config = SettingsConfigDict(env_prefix="HUB_", extra="ignore")

    data_dir: Path = Field(default=DEFAULT_DATA, description="Folder for the default database, files and queue.")
    database_url: str = Field(default="", description="SQLAlchemy URL; default: SQLite file in data_dir.")
    # A server process runs up to 40 requests at once (Starlette's thread pool); more connections than cores mostly
    # add lock contention (scripts/bench_ratings.py on 2 cores: 10+10 at least as fast as 20+20). Lower both when
    # many processes share one PostgreSQL.
    db_pool_size: int = Field(default=10, ge=1, description="Connections kept open per process (PostgreSQL).")
    db_max_overflow: int = Field(default=10, ge=0, description="Extra connections per process under load.")
    # A request that cannot get a connection this fast answers 503 with Retry-After instead of queueing for 30 s.
    db_pool_timeout: float = Field(default=2.0, gt=0, le=60, description="Seconds to wait for a pooled connection.")
    storage_url: str = Field(default="", description="file:///path or s3://bucket/prefix; default: data_dir/files.")
    s3_endpoint_url: str | None = Field(default=None, description="S3-compatible endpoint (e.g. a local server).")
    queue_url: str = Field(default="", description="redis://host:port/db, or empty for a SQLite queue in data_dir.")
    secret_key: str = Field(
        default="",
        description="Signs session cookies, CSRF tokens and rater hashes; empty: a random key kept in data_dir.",
    )
    secure_cookies: bool = Field(default=False, description="Send the session cookie over HTTPS only (production).")
    session_idle_minutes: int = Field(default=120, ge=1, description="A browser session unused this long ends.")
    session_max_days: int = Field(default=14, ge=1, description="A browser session ends this long after login.")
    # Rate limits (PyPI `limits` notation; several separated by ";"), counted per client address or per account.
    rate_limit_url: str = Field(
        default="",
        description="Where limits are counted: empty = the queue's Redis, else a SQLite file in data_dir; memory://.",
    )
    rate_limit_prefix: str = Field(default="chateval-hub", description="Key prefix of the counters in Redis.")
    login_failures_per_account: str = Field(default="10/15 minutes", description="Wrong passwords per account.")
    login_failures_per_client: str = Field(default="30/15 minutes", description="Failed logins per client address.")
    signups_per_client: str = Field(default="10/hour", description="Sign-up attempts per client address.")
    token_failures_per_client: str = Field(default="20/minute", description="Unknown API tokens per client address.")
    new_raters_per_client: str = Field(default="5/minute;20/hour", description="Cohort raters one client creates.")
    study_images_per_client: str = Field(
        default="20/minute;200/day", description="Images one client uploads to interactive studies."
    )
    max_upload_bytes: int = Field(default=100 * 1024 * 1024, description="Largest accepted uploaded file.")
    submissions_per_day: int = Field(default=5, ge=1, le=100_000, description="Valid submissions per user per UTC day.")
    submission_attempts_per_day: int = Field(
        default=50, ge=1, le=1_000_000, description="Upload attempts (valid or not) per user per UTC day."
    )
    max_form_bytes: int = Field(
        default=1024 * 1024, ge=1, description="Largest request body of a form or JSON call (uploads: see body_limit)."
    )
    public_url: str = Field(
        default="http://127.0.0.1:8000",
        description="Where raters reach the hub (invite links, MTurk ExternalQuestion).",
    )
    mturk_sandbox: bool = Field(default=True, description="Use Mechanical Turk's sandbox (no money moves).")
    mturk_region: str = Field(default="us-east-1", description="Mechanical Turk's region (it has only this one).")
    mturk_poll_seconds: int = Field(default=300, description="How often the queue polls MTurk for assignments.")
    snapshot_url: str = Field(
        default="", description="Folder or s3://bucket/prefix the publish_snapshot job writes to; empty: job off."
    )
    snapshot_every_hours: int = Field(default=24, ge=1, le=24, description="How often publish_snapshot runs.")
    sweep_seconds: int = Field(
        default=15, ge=1, le=3600, description="How often `chateval worker` sends waiting jobs and retries lost ones."
    )
    smtp_host: str = Field(
        default="", description="SMTP server for e-mail (notifications, password reset); empty: off."
    )
    smtp_port: int = Field(default=587, ge=1, le=65_535, description="SMTP port (587 STARTTLS, 465 TLS, 25 plain).")
    smtp_username: str = Field(default="", description="SMTP login; empty: no login.")
    smtp_password: str = Field(default="", description="SMTP password (never logged or shown).")
    smtp_from: str = Field(default="ChatEval Hub <hub@localhost>", description="The From address of the hub's mail.")
    smtp_security: str = Field(default="starttls", pattern="^(starttls|tls|none)$", description="starttls, tls, none.")
    password_reset_minutes: int = Field(default=60, ge=5, le=1440, description="How long a reset link works.")
    password_resets_per_client: str = Field(default="5/hour", description="Password-reset requests per address.")
    word_vectors: str = Field(
        default="", max_length=4096, description="Word vectors for embedding-average (PATH or gensim-test); empty: off."
    )
    word_vectors_datasets: str = Field(
        default="", max_length=65_536, description="Per-dataset vectors, 'ncm=PATH;dbdc=none' (wins over the hub's)."
    )
    stalled_after_seconds: int = Field(
        default=60, ge=2, le=86_400, description="An evaluation without a heartbeat this long lost its worker."
    )

    @field_validator(
        "login_failures_per_account",
        "login_failures_per_client",
        "signups_per_client",
        "token_failures_per_client",
        "new_raters_per_client",
        "password_resets_per_client",
        "study_images_per_client",
    )
    @classmethod
    def _rate_limit(cls, value: str) -> str:
        from limits import parse_many

        parse_many(value)  # ValueError names the bad notation at start-up, not on the first login
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'hub.db'}"

    @property
    def resolved_storage_url(self) -> str:
        return self.storage_url or (self.data_dir / "files").resolve().as_uri()


def data_dir_secret(data_dir: Path) -> str:
    """The random key kept in `data_dir/secret_key`, made on first use. Written whole under a temporary name and
    linked into place, so processes starting together all read the same complete key."""
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        staged = data_dir / f".secret_key.{os.getpid()}.{secrets.token_hex(4)}"
        staged.write_text(secrets.token_urlsafe(48), encoding="utf-8")
        staged.chmod(0o600)
        try:
            os.link(staged, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        finally:
            staged.unlink()
    return path.read_text(encoding="utf-8").strip()


@lru_cache
def get_settings() -> HubSettings:
    settings = HubSettings()
    if not settings.secret_key:  # never a published default: anyone could forge sessions and unmask rater hashes
        settings.secret_key = data_dir_secret(settings.data_dir)
    return settings
