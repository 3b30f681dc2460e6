"""Alembic environment: migrates the database named by the hub's settings (or by the caller's config)."""

from alembic import context
from sqlmodel import SQLModel

import hub.models  # noqa: F401  (registers every table on SQLModel.metadata)
from hub.db import get_engine, make_engine
from hub.settings import get_settings

config = context.config
target_metadata = SQLModel.metadata


def database_url() -> str:
    return config.attributes.get("database_url") or get_settings().resolved_database_url


def run_migrations_offline() -> None:
    context.configure(url=database_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.attributes.get("database_url")
    engine = make_engine(url) if url else get_engine()  # get_engine also creates the default data folder
    with engine.connect() as connection:
        _run(connection)


def _run(connection) -> None:
    # render_as_batch: SQLite cannot ALTER most things; batch mode rebuilds tables instead.
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
