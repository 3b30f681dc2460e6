"""Decoding of user text files into lines, refusing empty, binary, non-UTF-8 and over-long input by line."""

from __future__ import annotations

import shlex
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


# Byte-order marks of the Unicode encodings that are not UTF-8, longest first (UTF-32 LE starts like UTF-16 LE).
BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32", "UTF-32 (little-endian, with a byte-order mark)"),
    (b"\x00\x00\xfe\xff", "UTF-32", "UTF-32 (big-endian, with a byte-order mark)"),
    (b"\xff\xfe", "UTF-16", "UTF-16 (little-endian, with a byte-order mark)"),
    (b"\xfe\xff", "UTF-16", "UTF-16 (big-endian, with a byte-order mark)"),
)
SNIFF_BYTES = 4096


def _utf16_without_bom(data: bytes) -> str | None:
    """UTF-16LE or UTF-16BE when the start of `data` looks like mostly-ASCII text in it: a NUL in at least a third
    of the byte pairs on one side, and almost none on the other (binary files have NULs on both sides)."""
    head = data[: SNIFF_BYTES - SNIFF_BYTES % 2]
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if odd >= pairs / 3 and even <= pairs / 50:
        return "UTF-16LE"
    if even >= pairs / 3 and odd <= pairs / 50:
        return "UTF-16BE"
    return None


def _other_unicode(data: bytes) -> tuple[str, str] | None:
    """(iconv's name for the encoding, a label for people) when `data` is UTF-16 or UTF-32, else None."""
    for bom, source, label in BOMS:
        if data.startswith(bom):
            return source, label
    guessed = _utf16_without_bom(data)
    return (guessed, f"{guessed} (no byte-order mark)") if guessed else None


def _refuse_other_unicode(data: bytes, name: str | Path) -> None:
    """A UTF-16 or UTF-32 file is named as such, with the command that converts it, not called binary data."""
    found = _other_unicode(data)
    if found is None:
        return
    source, label = found
    filename = Path(str(name)).name or "FILE"
    converted = f"{Path(filename).stem}.utf8{Path(filename).suffix or '.txt'}"
    raise InvalidInputError(
        f"file is {label} text, not UTF-8; convert it first, e.g. "
        f"iconv -f {source} -t UTF-8 {shlex.quote(filename)} > {shlex.quote(converted)}",
        path=name,
    )


def decode_lines(data: bytes, *, name: str | Path, max_line_chars: int | None = None) -> list[str]:
    """Split UTF-8 bytes into lines (on "\\n" only, a final newline optional, "\\r\\n" accepted).

    Unicode line separators inside a line (U+2028, U+0085, form feeds) stay part of that line, so a
    response can never silently become two.
    """
    limit = max_line_chars if max_line_chars is not None else get_settings().max_line_chars
    if not data.strip():
        raise InvalidInputError("file is empty", path=name)
    _refuse_other_unicode(data, name)
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
