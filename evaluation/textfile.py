"""Decoding of user text files into lines, refusing empty, binary, non-UTF-8 and over-long input by line."""

from __future__ import annotations

from pathlib import Path

from evaluation.errors import InvalidInputError, NotFoundError
from evaluation.settings import get_settings


def read_bytes(path: Path) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise NotFoundError("file not found", path=path)
    limit = get_settings().max_file_bytes
    size = path.stat().st_size
    if size > limit:
        raise InvalidInputError(f"file is {size:,} bytes; the limit is {limit:,} bytes", path=path)
    return path.read_bytes()


def _line_number_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_lines(data: bytes, *, name: str | Path, max_line_chars: int | None = None) -> list[str]:
    """Split UTF-8 bytes into lines (on "\\n" only, a final newline optional, "\\r\\n" accepted).

    Unicode line separators inside a line (U+2028, U+0085, form feeds) stay part of that line, so a
    response can never silently become two.
    """
    limit = max_line_chars if max_line_chars is not None else get_settings().max_line_chars
    if not data.strip():
        raise InvalidInputError("file is empty", path=name)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InvalidInputError(
            "binary data (NUL byte) found; expected UTF-8 text", path=name, line=_line_number_at(data, nul)
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            path=name,
            line=_line_number_at(data, exc.start),
        ) from exc
    text = text.removeprefix("\ufeff")
    if text.endswith("\n"):
        text = text[:-1]
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if line.endswith("\r"):
            line = line[:-1]
            lines[number - 1] = line
        if len(line) > limit:
            raise InvalidInputError(
                f"line is {len(line):,} characters long; the limit is {limit:,}", path=name, line=number
            )
    return lines
