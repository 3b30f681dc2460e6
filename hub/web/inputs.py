"""Bounded input at the edge: shared types for ids, and one guard every request passes before its route runs.

The guard (`refuse_malformed_input`, an app-wide dependency) refuses with 422, naming the field:
- control characters (NUL and the other C0 controls except tab, line feed and carriage return; DEL) and lone
  surrogates in any path parameter, query parameter, form field (names and values; file names, not file contents)
  or JSON string or key: PostgreSQL cannot store NUL and no text of the hub needs the others;
- integers in JSON beyond a signed 64-bit column and non-finite numbers (`Infinity`, `NaN`, `1e999`).

Ids in paths, query strings and forms use the `*Id` types below (1 .. 2**63 - 1), or `parse_id` where a route
reads them by hand, so that a number the database cannot hold is refused instead of crashing the query.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from fastapi import Form, Path, Query, Request
from starlette.datastructures import UploadFile

from hub.errors import UnprocessableInput

MAX_DATABASE_ID = 2**63 - 1  # SQLite's INTEGER and PostgreSQL's BIGINT
MIN_JSON_INTEGER = -(2**63)

DatabaseId = Annotated[int, Path(ge=1, le=MAX_DATABASE_ID, description="Row id")]
"""A path id the database can hold: larger numbers are refused with 422 instead of crashing the query."""
QueryId = Annotated[int, Query(ge=1, le=MAX_DATABASE_ID, description="Row id")]
FormId = Annotated[int, Form(ge=1, le=MAX_DATABASE_ID, description="Row id")]

CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
"""C0 controls but tab, LF and CR; DEL; lone surrogates (no UTF-8 encoding exists for them)."""
ID_TEXT = re.compile(r"[0-9]{1,19}")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def parse_id(raw: object, *, field: str) -> int:
    """`raw` as a row id, or 422 naming `field`: whole numbers from 1 to 2**63 - 1 only."""
    text = str(raw).strip()
    if ID_TEXT.fullmatch(text) and 1 <= int(text) <= MAX_DATABASE_ID:
        return int(text)
    raise UnprocessableInput(f"{text[:40]!r} is not an id (a whole number from 1 to {MAX_DATABASE_ID})", field=field)


def printable_name(name: str) -> str:
    """A field name safe to echo back: control characters escaped."""
    return CONTROL_CHARACTERS.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode(), name)


def check_text(value: str, *, field: str) -> str:
    """`value` unchanged, or 422 naming `field` if it holds a control character or a lone surrogate."""
    found = CONTROL_CHARACTERS.search(value)
    if found:
        code = ord(found.group())
        raise UnprocessableInput(
            f"contains the control character U+{code:04X} at position {found.start()}; "
            "control characters (other than tab and line breaks) are not accepted",
            field=printable_name(field),
        )
    return value


def check_json(value: Any, *, field: str) -> None:
    """Every string and key of a parsed JSON document, every integer within 64 bits, every number finite."""
    if isinstance(value, str):
        check_text(value, field=field or "body")
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not MIN_JSON_INTEGER <= value <= MAX_DATABASE_ID:
            raise UnprocessableInput("number is out of range (at most 2**63 - 1 in magnitude)", field=field or "body")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise UnprocessableInput("number must be finite", field=field or "body")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key), field=field or "body")
            check_json(item, field=f"{field}.{key}" if field else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_json(item, field=f"{field}[{index}]" if field else f"[{index}]")


async def refuse_malformed_input(request: Request) -> None:
    """App-wide dependency: runs before every route's own dependencies (so before any database query)."""
    for name, value in request.path_params.items():
        if isinstance(value, str):
            check_text(value, field=name)
    for name, value in request.query_params.multi_items():
        check_text(name, field=name)
        check_text(value, field=name)
    content_type = request.headers.get("content-type", "").lower()
    if content_type.startswith(FORM_TYPES):
        # Parsed once: Starlette caches the form, so the route's own `request.form()` (or FastAPI's) reuses it.
        form = await request.form()
        for name, item in form.multi_items():
            check_text(name, field=name)
            if isinstance(item, UploadFile):
                check_text(item.filename or "", field=name)
            else:
                check_text(item, field=name)
    elif "json" in content_type:
        try:
            document = await request.json()
        except (ValueError, UnicodeDecodeError):
            return  # not JSON: the route's own validation answers 422 (or ignores a body it does not read)
        check_json(document, field="")
