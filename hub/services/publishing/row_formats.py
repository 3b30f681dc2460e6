"""The downloads' two text formats, a batch of rows at a time: JSONL lines (one `json.dumps` object per row) and
CSV lines (RFC 4180; cells as exports.py documents them: booleans `true`/`false`, lists and objects as JSON, empty
for null, text quote-prefixed when a spreadsheet would run it as a formula). Both are built for millions of rows:
the JSON encoder is made once, and CSV cells are converted column by column, at C speed where the column needs no
change (numbers, nulls, text that starts like no formula)."""

from __future__ import annotations

import csv
import io
import itertools
import json
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from evaluation import csv_cells

Row = dict[str, Any]
BATCH = 500  # rows written (and fetched from the database) at a time

_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)  # lines as json.dumps(row, same options)


def _row_chunks() -> Callable[[Row], Iterable[str]]:
    """A row's JSON text in pieces. The C encoder is made once here (JSONEncoder.encode makes one per call, which is
    a third of the time of a short row); rows read from the database hold no circular references to check for."""
    make = json.encoder.c_make_encoder
    if make is None:  # no C accelerator: the encoder's own path
        return lambda row: (_ROW_ENCODER.encode(row),)
    encode = make(None, _ROW_ENCODER.default, json.encoder.c_encode_basestring, None, ": ", ", ", False, False, False)
    return lambda row: encode(row, 0)


_row_json = _row_chunks()


def _csv_value(value: Any) -> Any:
    """One CSV cell, as exports.py documents them."""
    kind = type(value)  # the common cases first: a download has millions of cells
    if kind is str:
        return csv_cells.neutralise(value)  # a text cell never runs as a spreadsheet formula
    if value is None:
        return ""
    if kind is int or kind is float:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return csv_cells.neutralise(value)
    return value


def jsonl_lines(rows: list[Row]) -> str:
    """Rows as JSONL lines (each ends with a newline)."""
    row_json = _row_json
    return "".join(["".join(row_json(row)) + "\n" for row in rows])


def values_of(fields: tuple[str, ...]) -> Callable[[Row], tuple[Any, ...]]:
    """A function giving a row's values in the order of `fields`, as a tuple."""
    if len(fields) == 1:
        name = fields[0]
        return lambda row: (row[name],)
    return operator.itemgetter(*fields)


_PLAIN_CSV = frozenset({int, float, type(None)})  # written by the csv module as they are (None as an empty cell)
_CSV_BOOLEANS = {True: "true", False: "false", None: None}


def _csv_column(values: tuple[Any, ...]) -> Iterable[Any]:
    """One column of a batch as CSV cells (what `_csv_value` gives each), with the common cases at C speed: numbers,
    text that needs no quote (most of it) and booleans."""
    kinds = set(map(type, values))
    if kinds <= _PLAIN_CSV:
        return values
    if kinds <= {str, type(None)}:
        if csv_cells.QUOTED_STARTS.isdisjoint([text[:1] for text in values if text]):
            return values
    elif kinds <= {bool, type(None)}:
        return map(_CSV_BOOLEANS.__getitem__, values)
    return map(_csv_value, values)


class CsvLines:
    """Rows with these fields as CSV lines: the header first, then `lines(rows)` batch by batch."""

    def __init__(self, fields: tuple[str, ...]) -> None:
        self.values = values_of(fields)
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer)
        self.writer.writerow(fields)

    def lines(self, rows: list[Row]) -> str:
        if rows:  # column by column, then back into rows
            columns = zip(*map(self.values, rows), strict=True)
            self.writer.writerows(zip(*map(_csv_column, columns), strict=True))
        text = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        return text


def batches(rows: Iterator[Row], size: int = BATCH) -> Iterator[list[Row]]:
    while batch := list(itertools.islice(rows, size)):
        yield batch
