"""One study's data as a download file (hub/services/studies/data_rows.py has the rows and their fields), written
whole while the database session is open, in the hub's download formats (hub/services/publishing/exports.py):
admins get every conversation (their own test chats and endpoint error texts too), anyone else a published study's
participants' rows."""

from __future__ import annotations

import tempfile

from sqlmodel import Session

from hub.models import User
from hub.services.publishing import exports
from hub.services.studies import data_rows
from hub.services.studies import records as study_records

FORMATS = {
    "conversations.jsonl": ("study_conversations", "jsonl"),
    "annotations.csv": ("study_annotations", "csv"),
    "annotations.jsonl": ("study_annotations", "jsonl"),
}


def study_download(session: Session, viewer: User | None, study_id: int, name: str) -> exports.SpooledExport:
    """One study's `name` (a key of FORMATS) written whole into a temporary file while the session is open; admins get
    every conversation (their own test chats and error texts too), anyone else a published study's public rows."""
    kind, fmt = FORMATS[name]
    study = study_records.readable_study(session, viewer, study_id)
    data = study_records.load(session, study, public=not (viewer is not None and viewer.is_admin))
    fields = data_rows.TABLES[kind]
    chunks = (
        exports.jsonl_chunks(kind, data_rows.rows(data, kind), fields)
        if fmt == "jsonl"
        else exports.csv_chunks(kind, data_rows.rows(data, kind), fields)
    )
    spooled = tempfile.SpooledTemporaryFile(max_size=exports.SPOOL_MEMORY_BYTES, mode="w+b")  # noqa: SIM115
    size = 0
    try:
        for chunk in chunks:
            size += spooled.write(chunk.encode("utf-8"))
    except BaseException:
        spooled.close()
        raise
    filename = f"chateval-study-{study_id}-{name}"
    headers = {
        "X-Schema-Version": str(exports.SCHEMA_VERSION),
        "Content-Disposition": f'attachment; filename="{filename}"',
    }
    return exports.SpooledExport(filename, exports.MEDIA_TYPES[fmt], headers, spooled, size)
