"""Runs the Alembic migrations programmatically (on `chateval serve` start, in tests, by `chateval db`)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "alembic.ini"


def alembic_config(database_url: str | None = None) -> Config:
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(Path(__file__).resolve().parent / "migrations"))
    if database_url:
        config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str | None = None, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def check(database_url: str | None = None) -> None:
    """Raise if the models and the migrated schema differ (a migration is missing)."""
    command.check(alembic_config(database_url))
