"""Bulk downloads of all public data (systems, submissions, scores, responses) as streamed JSONL or CSV.

A download is a publication: it holds exactly what an anonymous visitor may see, whoever asks. Public means
the system is public or a baseline AND the submission is evaluated or later (`evaluated`, `human_evaluation`,
`complete`), checked with the same `can_view` as every page.

Schema version 1 (sent as the `X-Schema-Version: 1` header of every download):

- JSONL: the first line is `{"schema_version": 1, "kind": KIND, "fields": [...]}`; then one object per row with
  exactly those fields. Lists and objects stay JSON values.
- CSV (RFC 4180, UTF-8, written by the csv module): a header row with the field names, then one row per record.
  Empty cell = null; booleans are `true`/`false`; list and object fields (`baseline_ids`, `per_prompt`,
  `details`) are JSON strings. Numbers not finite (NaN, infinity) are written as null. A text cell that starts with
  `=`, `+`, `-`, `@`, a tab, a carriage return or a single quote gets one extra leading single quote, so that a
  spreadsheet shows it as text and never runs it as a formula; drop one leading quote to get the value back
  (evaluation/csv_cells.py; `chateval irt fit` and scripts/analyze_ratings.py do). Numbers are never quoted, and
  JSONL holds every value as it is.

Fields per kind (timestamps are ISO 8601):

- `systems`: id, name, description, paper_url, code_url, weights_url, is_baseline, created_at.
  One row per system with at least one public submission.
- `submissions`: id, system_id, system_name, dataset, dataset_fingerprint, status, responses_sha256,
  responses_format, baseline_ids (list of system ids), created_at.
- `scores`: id, submission_id, system_id, dataset, dataset_fingerprint, metric, version, signature, corpus,
  higher_is_better (true, false or null when the metric has no direction), per_prompt (list of numbers or
  nulls, in the dataset's prompt order), details (object), created_at. Every stored score, old metric versions
  included; `signature` tells them apart.
- `responses`: submission_id, system_id, dataset, dataset_fingerprint, prompt_id, response. One row per
  (submission, prompt). Submissions to a dataset release that is no longer installed are left out, since
  their lines could not be matched to prompt ids.
- `ratings`: every rating of every public experiment (both systems public), one row per judgement: rating_id,
  experiment_id, dataset, dataset_fingerprint, prompt_id, item_id (a repeated pair carries its original's id),
  item_kind (pair | attention | repeat | known_answer: only `pair` rows judge the two systems), system_a, system_b,
  system_a_id, system_b_id, left (A or B: the system shown on the left), choice (left | right | tie | both_good |
  both_bad), outcome (A | B | tie), auto_tie (identical responses: tie recorded, never shown), expected (A for check
  items: the real or known-better response), rater (salted hash; never the worker id), backend (hub | mturk |
  import), task_id, assignment_id, external_assignment_id, created_at, submitted_at, seconds_on_task (whole task),
  excluded and exclusion_reason (an admin's exclusion: the rows stay, flagged), held_out (true while the rater's
  screening flagged them and no admin has decided: public numbers and the IRT fit leave these rows out, like
  excluded ones). Nothing derived from raters' client addresses is published (the screening's burst flag, raters
  created from one client, is shown to admins only).
- `irt_systems`, `irt_pairs`, `irt_prompts`: the newest IRT fit of every dataset with public judgements, one row per
  system (ability with its bootstrap interval, rank and rank interval, tier, judgements, anchor), per pair of
  systems (system_a_id, system_a, system_b_id, system_b: systems are identified by id, names are labels; difference
  A - B with interval, bootstrap standard error, p-value and corrected p-value, significant)
  and per prompt (discrimination, standard error of its logarithm, judgements, rank, 1 = most discriminating).
  Every row carries fit_id, dataset, fitted_at and the fit's method signature; `chateval irt fit --ratings
  ratings.jsonl --dataset NAME --anchor ID` refits every one of them exactly from the `ratings` download.
- `studies`, `study_conversations`, `study_annotations`: interactive studies an admin closed and published, their
  participants' conversations (one row per conversation: its messages as a tree in the chat-messages shape, with
  post-edits, branches and their outcomes, reversals) and their per-turn answers; participants appear only as salted
  hashes. Fields in hub/services/studies/data_rows.py.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, or_
from sqlmodel import Session, col, select

from evaluation.dataset import Dataset
from hub.errors import HubError, NotFound
from hub.models import Score, Submission, System
from hub.services.human import ratings_rows
from hub.services.platform.datasets import installed_dataset
from hub.services.publishing import row_formats
from hub.services.statistics import irt_rows
from hub.services.studies import data_rows as study_rows
from hub.services.submissions.results import RESULT_STATUSES, finite, read_responses
from hub.services.submissions.submissions import can_view
from hub.storage import Storage

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
FIELDS: dict[str, tuple[str, ...]] = {
    "systems": ("id", "name", "description", "paper_url", "code_url", "weights_url", "is_baseline", "created_at"),
    "submissions": (
        "id",
        "system_id",
        "system_name",
        "dataset",
        "dataset_fingerprint",
        "status",
        "responses_sha256",
        "responses_format",
        "baseline_ids",
        "created_at",
    ),
    "scores": (
        "id",
        "submission_id",
        "system_id",
        "dataset",
        "dataset_fingerprint",
        "metric",
        "version",
        "signature",
        "corpus",
        "higher_is_better",
        "per_prompt",
        "details",
        "created_at",
    ),
    "responses": ("submission_id", "system_id", "dataset", "dataset_fingerprint", "prompt_id", "response"),
    "ratings": ratings_rows.FIELDS,
    **irt_rows.FIELDS,
    **study_rows.TABLES,
}
MEDIA_TYPES = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}
BATCH = row_formats.BATCH  # rows fetched from the database and written to the client at a time
SPOOL_MEMORY_BYTES = 1024 * 1024  # a spooled download beyond this moves from memory to an unlinked temporary file
READ_BYTES = 64 * 1024  # a spooled download is sent in pieces of this size

Row = dict[str, Any]


@dataclass(frozen=True)
class Export:
    filename: str
    media_type: str
    chunks: Iterator[str]

    @property
    def headers(self) -> dict[str, str]:
        return {
            "X-Schema-Version": str(SCHEMA_VERSION),
            "Content-Disposition": f'attachment; filename="{self.filename}"',
        }


def _public(query):
    """Restrict a query joining Submission and System to public rows (can_view re-checks each one)."""
    return query.where(
        col(Submission.status).in_(RESULT_STATUSES), or_(col(System.is_public), col(System.is_baseline))
    ).execution_options(yield_per=BATCH)


def _public_submissions(session: Session, *order) -> Iterator[tuple[Submission, System]]:
    query = select(Submission, System).join(System, col(System.id) == col(Submission.system_id)).order_by(*order)
    for submission, system in session.exec(_public(query)):
        if can_view(submission, system, None):
            yield submission, system


def _systems(session: Session, _storage: Storage) -> Iterator[Row]:
    last_id = None
    for _, system in _public_submissions(session, col(Submission.system_id), col(Submission.id)):
        if system.id == last_id:
            continue
        last_id = system.id
        yield {
            "id": system.id,
            "name": system.name,
            "description": system.description,
            "paper_url": system.paper_url,
            "code_url": system.code_url,
            "weights_url": system.weights_url,
            "is_baseline": system.is_baseline,
            "created_at": system.created_at.isoformat(),
        }


def _submissions(session: Session, _storage: Storage) -> Iterator[Row]:
    for submission, system in _public_submissions(session, col(Submission.id)):
        yield {
            "id": submission.id,
            "system_id": system.id,
            "system_name": system.name,
            "dataset": submission.dataset_name,
            "dataset_fingerprint": submission.dataset_fingerprint,
            "status": submission.status.value,
            "responses_sha256": submission.responses_sha256,
            "responses_format": submission.responses_format,
            "baseline_ids": list(submission.baseline_ids),
            "created_at": submission.created_at.isoformat(),
        }


def _finite_list(values: list[float | None]) -> list[float | None]:
    """`finite` of every value; at C speed when all are finite numbers (their sum is then finite: a NaN or an
    infinity would make it NaN or infinite)."""
    try:
        if math.isfinite(sum(values)):
            return list(values)
    except (TypeError, OverflowError):  # a None among them (or a number too large for a float)
        pass
    return [finite(v) for v in values]


def _scores(session: Session, _storage: Storage) -> Iterator[Row]:
    query = (
        select(Score, Submission, System)
        .join(Submission, col(Submission.id) == col(Score.submission_id))
        .join(System, col(System.id) == col(Submission.system_id))
        .order_by(col(Score.id))
    )
    for score, submission, system in session.exec(_public(query)):
        if not can_view(submission, system, None):
            continue
        yield {
            "id": score.id,
            "submission_id": submission.id,
            "system_id": system.id,
            "dataset": submission.dataset_name,
            "dataset_fingerprint": submission.dataset_fingerprint,
            "metric": score.metric,
            "version": score.version,
            "signature": score.signature,
            "corpus": finite(score.corpus),
            "higher_is_better": score.higher_is_better,
            "per_prompt": _finite_list(score.per_prompt),
            "details": score.details,
            "created_at": score.created_at.isoformat(),
        }


def _current_dataset(cache: dict[str, Dataset | None], submission: Submission) -> Dataset | None:
    """The installed release the submission was made against, or None (not installed, damaged or changed)."""
    if submission.dataset_name not in cache:
        try:
            cache[submission.dataset_name] = installed_dataset(submission.dataset_name)
        except HubError:
            cache[submission.dataset_name] = None
    dataset = cache[submission.dataset_name]
    return dataset if dataset is not None and dataset.fingerprint == submission.dataset_fingerprint else None


def _responses(session: Session, storage: Storage) -> Iterator[Row]:
    datasets: dict[str, Dataset | None] = {}
    for submission, system in _public_submissions(session, col(Submission.id)):
        dataset = _current_dataset(datasets, submission)
        if dataset is None:
            log.warning("responses export leaves out submission %s: its dataset release is gone", submission.id)
            continue
        try:
            lines = read_responses(storage, submission, dataset)
        except HubError:  # logged by read_responses; one damaged file must not cut the download short
            continue
        submission_id, system_id, name, fingerprint = submission.id, system.id, dataset.name, dataset.fingerprint
        for prompt_id, response in zip(dataset.prompt_ids, lines, strict=True):
            yield {
                "submission_id": submission_id,
                "system_id": system_id,
                "dataset": name,
                "dataset_fingerprint": fingerprint,
                "prompt_id": prompt_id,
                "response": response,
            }


ROWS: dict[str, Callable[[Session, Storage], Iterator[Row]]] = {
    "systems": _systems,
    "submissions": _submissions,
    "scores": _scores,
    "responses": _responses,
    "ratings": lambda session, _storage: ratings_rows.ratings_rows(session),
    **{kind: (lambda session, _storage, kind=kind: irt_rows.irt_rows(session, kind)) for kind in irt_rows.FIELDS},
    **{kind: study_rows.published_rows(kind) for kind in study_rows.TABLES},
}


def jsonl_header(kind: str, fields: tuple[str, ...]) -> str:
    return json.dumps({"schema_version": SCHEMA_VERSION, "kind": kind, "fields": list(fields)}) + "\n"


def jsonl_chunks(kind: str, rows: Iterator[Row], fields: tuple[str, ...] | None = None) -> Iterator[str]:
    """The JSONL download of `kind` (or of a table with these `fields`, as the snapshot's extra tables), in chunks."""
    yield jsonl_header(kind, FIELDS[kind] if fields is None else fields)
    for batch in row_formats.batches(iter(rows)):
        yield row_formats.jsonl_lines(batch)


def csv_chunks(kind: str, rows: Iterator[Row], fields: tuple[str, ...] | None = None) -> Iterator[str]:
    """The CSV download of `kind` (or of a table with these `fields`), in chunks."""
    lines = row_formats.CsvLines(FIELDS[kind] if fields is None else fields)
    yield lines.lines([])
    for batch in row_formats.batches(iter(rows)):
        yield lines.lines(batch)


def _rows(engine: Engine, storage: Storage, kind: str) -> Iterator[Row]:
    """Opens its own session: the rows are produced while the response streams, after the request's has closed."""
    with Session(engine) as session:
        yield from ROWS[kind](session, storage)


@dataclass(frozen=True)
class SpooledExport:
    """A download written whole, with the database session already closed: sending it to a slow or stalled client
    holds a file, never a database connection."""

    filename: str
    media_type: str
    headers: dict[str, str]
    file: tempfile.SpooledTemporaryFile
    size: int

    def pieces(self) -> Iterator[bytes]:
        """The file from the start, then closed (also when the client goes away and the iterator is dropped)."""
        try:
            self.file.seek(0)
            while piece := self.file.read(READ_BYTES):
                yield piece
        finally:
            self.file.close()


def spool_export(engine: Engine, storage: Storage, filename: str) -> SpooledExport:
    """Build a download into a temporary file (memory bounded by SPOOL_MEMORY_BYTES plus one batch) while holding a
    session, close the session, and hand back the file to send."""
    export = open_export(engine, storage, filename)
    spooled = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES, mode="w+b")  # noqa: SIM115 (pieces() closes it)
    size = 0
    try:
        for chunk in export.chunks:
            size += spooled.write(chunk.encode("utf-8"))
    except BaseException:
        spooled.close()
        raise
    return SpooledExport(export.filename, export.media_type, export.headers, spooled, size)


def parse_filename(filename: str) -> tuple[str, str]:
    """`KIND.FORMAT` -> (kind, format), or 404 naming the downloads there are."""
    kind, _, fmt = filename.partition(".")
    if kind not in FIELDS or fmt not in MEDIA_TYPES:
        raise NotFound(f"no download {filename!r}; choose one of {', '.join(FIELDS)} as .jsonl or .csv")
    return kind, fmt


def open_export(engine: Engine, storage: Storage, filename: str) -> Export:
    """`KIND.FORMAT`, produced lazily with its own session, open until the last row is read (for writers that
    never wait on a client: `chateval export`, spool_export)."""
    kind, fmt = parse_filename(filename)
    rows = _rows(engine, storage, kind)
    chunks = jsonl_chunks(kind, rows) if fmt == "jsonl" else csv_chunks(kind, rows)
    return Export(filename=f"chateval-{kind}.{fmt}", media_type=MEDIA_TYPES[fmt], chunks=chunks)
