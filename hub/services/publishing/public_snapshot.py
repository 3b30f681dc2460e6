"""Build a public snapshot in a folder: every public table as JSONL and CSV (the downloads' own formats), one SQLite
file of all of them, an `index.html` and a `manifest.json`; the same data gives the same bytes.

Nothing in it comes from the wall clock: the one date it carries, `data_changed_at`, is the newest timestamp in the
published rows. All tables are read in one database transaction (REPEATABLE READ on PostgreSQL, one read transaction
on SQLite), in id order. The SQLite file is built with a fixed page size and no journal, rows inserted in that order,
then VACUUMed, so its bytes depend only on the rows. The snapshot's version is that date and the start of the
sha256 of the manifest (which holds the sha256 of every other file), e.g. `20261123T224000Z-1f0c2a9e77d4b3a1`.
"""

from __future__ import annotations

import gc
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy import Engine, text
from sqlmodel import Session

import evaluation
from hub.services.publishing import exports, row_formats
from hub.services.publishing.snapshot_tables import (
    INDEXED,
    JSON_COLUMNS,
    Row,
    Table,
    column_note,
    column_type,
    tables,
)
from hub.storage import Storage

SNAPSHOT_FORMAT = 1  # this layout: files, manifest fields, SQLite tables
SQLITE_NAME = "chateval.sqlite"
PAGE_SIZE = 4096
EPOCH = "1970-01-01T00:00:00+00:00"
TEMPLATES = Path(__file__).resolve().parents[3] / "templates"  # the hub's templates folder (as hub.web.templating)

Progress = Callable[[str, int, int], None]  # (step, done, total)
_json_text = json.JSONEncoder(ensure_ascii=False).encode  # lists and objects in the SQLite file


@dataclass(frozen=True)
class Built:
    version: str
    manifest: dict[str, Any]
    files: list[str]  # every file name, manifest.json last


def code_version() -> str:
    try:
        return f"chateval-hub {metadata.version('chateval-hub')}"
    except metadata.PackageNotFoundError:
        return f"chateval-hub {evaluation.__version__}"


@contextmanager
def consistent_session(engine: Engine) -> Iterator[Session]:
    """A session whose every read sees the database as of its first one (a write committed meanwhile is not seen)."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection = connection.execution_options(isolation_level="REPEATABLE READ")
            connection.exec_driver_sql("SET TRANSACTION READ ONLY")
        elif connection.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN")  # the driver starts no transaction for reads by itself
        with Session(bind=connection) as session:
            try:
                yield session
            finally:
                connection.rollback()


def _database_revision(session: Session) -> str | None:
    try:
        with session.connection().begin_nested():
            return session.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except Exception:  # a database made without migrations (tests' create_all)
        return None


class _SqliteTable:
    """Rows into one table of the snapshot's SQLite file, a batch at a time."""

    def __init__(self, database: sqlite3.Connection, table: Table) -> None:
        self.database, self.table = database, table
        columns = ", ".join(f'"{name}" {column_type(name)}' for name in table.fields)
        database.execute(f'CREATE TABLE "{table.name}" ({columns})')
        marks = ", ".join("?" for _ in table.fields)
        self.insert = f'INSERT INTO "{table.name}" VALUES ({marks})'
        self.values = row_formats.values_of(table.fields)
        # Only lists and objects need converting (to JSON text); sqlite3 stores booleans as 0/1 itself.
        self.json_columns = [i for i, name in enumerate(table.fields) if name in JSON_COLUMNS]

    def add(self, rows: list[Row]) -> None:
        values = map(self.values, rows)
        if self.json_columns:
            values = map(self._json_text, values)
        self.database.executemany(self.insert, values)

    def _json_text(self, values: tuple[Any, ...]) -> list[Any]:
        converted = list(values)
        for i in self.json_columns:
            if converted[i] is not None:
                converted[i] = _json_text(converted[i])
        return converted

    def index(self) -> None:
        for name in INDEXED:
            if name in self.table.fields:
                self.database.execute(f'CREATE INDEX "{self.table.name}_{name}" ON "{self.table.name}" ("{name}")')


class _Sha256File:
    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.digest = handle, hashlib.sha256()

    def write(self, text_chunk: str) -> None:
        data = text_chunk.encode("utf-8")
        self.digest.update(data)
        self.handle.write(data)


def _write_table(table: Table, rows: Iterator[Row], folder: Path, database: _SqliteTable) -> tuple[int, str, dict]:
    """One pass over the rows, a batch at a time: the JSONL and CSV downloads (exports' own writers) and the SQLite
    table. Returns the row count, newest timestamp and file digests."""
    count, newest = 0, EPOCH
    stamps = [name for name in table.fields if name.endswith("_at")]
    csv_lines = row_formats.CsvLines(table.fields)
    with (
        (folder / f"{table.name}.jsonl").open("wb") as jsonl_file,
        (folder / f"{table.name}.csv").open("wb") as csv_file,
    ):
        jsonl, csv = _Sha256File(jsonl_file), _Sha256File(csv_file)
        jsonl.write(exports.jsonl_header(table.name, table.fields))
        csv.write(csv_lines.lines([]))
        for batch in row_formats.batches(rows):
            count += len(batch)
            for name in stamps:  # ISO 8601 text, compared as text (normalised across tables by the caller)
                newest = max(newest, max((row[name] for row in batch if row[name]), default=EPOCH))
            jsonl.write(row_formats.jsonl_lines(batch))
            csv.write(csv_lines.lines(batch))
            database.add(batch)
    return count, newest, {f"{table.name}.jsonl": jsonl.digest.hexdigest(), f"{table.name}.csv": csv.digest.hexdigest()}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while piece := handle.read(1024 * 1024):
            digest.update(piece)
    return digest.hexdigest()


def _normalise(stamp: str) -> datetime:
    parsed = datetime.fromisoformat(stamp)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def _info_tables(database: sqlite3.Connection, info: dict[str, str], found: list[Table]) -> None:
    """`snapshot_info` (key, value) and `snapshot_columns` (the schema in words), for sqlite3 and datasette users."""
    database.execute('CREATE TABLE "snapshot_info" ("key" TEXT PRIMARY KEY, "value" TEXT)')
    database.executemany('INSERT INTO "snapshot_info" VALUES (?, ?)', sorted(info.items()))
    database.execute(
        'CREATE TABLE "snapshot_columns" ("table_name" TEXT, "position" INTEGER, "column_name" TEXT, '
        '"type" TEXT, "note" TEXT, "table_description" TEXT, PRIMARY KEY ("table_name", "position"))'
    )
    database.executemany(
        'INSERT INTO "snapshot_columns" VALUES (?, ?, ?, ?, ?, ?)',
        [
            (table.name, position, name, column_type(name), column_note(name), table.description)
            for table in found
            for position, name in enumerate(table.fields, start=1)
        ],
    )


def _index_html(context: dict[str, Any]) -> str:
    environment = Environment(
        loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]), keep_trailing_newline=True
    )
    return environment.get_template("standalone/snapshot_index.html").render(**context)


@contextmanager
def _cyclic_collector_paused() -> Iterator[None]:
    """A snapshot makes and drops millions of small acyclic rows; the cyclic collector would walk every live object
    again and again for them (about a tenth of the CPU time). Reference counting still frees each batch."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build(engine: Engine, storage: Storage, folder: Path, progress: Progress | None = None) -> Built:
    """Write a whole snapshot into `folder` (empty, on the same file system as its final place)."""
    with _cyclic_collector_paused():
        return _build(engine, storage, folder, progress)


def _build(engine: Engine, storage: Storage, folder: Path, progress: Progress | None) -> Built:
    digests: dict[str, str] = {}
    counts: dict[str, int] = {}
    newest = EPOCH
    building = folder / f".{SQLITE_NAME}.build"
    database = sqlite3.connect(building, isolation_level=None)
    try:
        database.execute(f"PRAGMA page_size={PAGE_SIZE}")
        database.execute("PRAGMA journal_mode=OFF")
        database.execute("PRAGMA synchronous=OFF")
        database.execute("BEGIN")
        with consistent_session(engine) as session:
            found = tables(session)
            revision = _database_revision(session)
            for done, table in enumerate(found):
                if progress:
                    progress(f"table {table.name}", done, len(found))
                writer = _SqliteTable(database, table)
                count, latest, written = _write_table(table, table.rows(session, storage), folder, writer)
                writer.index()
                counts[table.name], newest = count, max(newest, latest, key=_normalise)
                digests.update(written)
        changed_at = _normalise(newest).isoformat()
        info = {
            "snapshot_format": str(SNAPSHOT_FORMAT),
            "schema_version": str(exports.SCHEMA_VERSION),
            "database_revision": revision or "",
            "code_version": code_version(),
            "data_changed_at": changed_at,
        }
        _info_tables(database, info, found)
        database.execute("COMMIT")
        if progress:
            progress("SQLite file", len(found), len(found))
        database.execute("VACUUM")
    finally:
        database.close()
    building.replace(folder / SQLITE_NAME)
    digests[SQLITE_NAME] = _sha256(folder / SQLITE_NAME)
    sizes = {name: (folder / name).stat().st_size for name in digests}
    listing = [
        {
            "name": table.name,
            "description": table.description,
            "rows": counts[table.name],
            "columns": [(name, column_type(name), column_note(name)) for name in table.fields],
        }
        for table in found
    ]
    files = [{"name": name, "bytes": sizes[name], "sha256": digests[name]} for name in sorted(digests)]
    html = _index_html({**info, "tables": listing, "files": files, "sqlite_name": SQLITE_NAME})
    (folder / "index.html").write_bytes(html.encode("utf-8"))
    digests["index.html"] = _sha256(folder / "index.html")
    sizes["index.html"] = len(html.encode("utf-8"))
    manifest = {
        "snapshot_format": SNAPSHOT_FORMAT,
        "schema_version": exports.SCHEMA_VERSION,
        "database_revision": revision,
        "code_version": code_version(),
        "data_changed_at": changed_at,
        "tables": counts,
        "files": {name: digests[name] for name in sorted(digests)},
        "sizes": {name: sizes[name] for name in sorted(sizes)},
    }
    body = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
    (folder / "manifest.json").write_bytes(body)
    version = f"{_normalise(newest).strftime('%Y%m%dT%H%M%SZ')}-{hashlib.sha256(body).hexdigest()[:16]}"
    return Built(version, manifest, [*sorted(digests), "manifest.json"])
