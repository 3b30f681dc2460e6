"""Text files as people make them: UTF-16/UTF-32 files are named as such with the command that converts them, and a
blank line in a text response file is refused with its number unless `--allow-empty` says empty responses are meant.
The CLI runs as a real `chateval` process."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.dataset import load_dataset
from evaluation.errors import InvalidInputError
from evaluation.responses import parse_responses
from evaluation.textfile import decode_lines

CHATEVAL = Path(sys.executable).with_name("chateval")
DATASET = "hub-open-v1"


@pytest.fixture(scope="module")
def hub_open():
    return load_dataset(DATASET)


def lines_of(hub_open) -> list[str]:
    return [f"réponse {i}: ok" for i in range(len(hub_open))]


def chateval(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHATEVAL), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def one_line(text: str) -> str:
    return " ".join(text.split())


# --- UTF-16 and UTF-32 ------------------------------------------------------------------------------------------------

# (Python codec, iconv's name in the message, words of the label)
ENCODINGS = [
    ("utf-16", "UTF-16", "UTF-16 (little-endian, with a byte-order mark)"),  # Python writes a little-endian BOM
    ("utf-16-le", "UTF-16LE", "UTF-16LE (no byte-order mark)"),  # what some Windows tools write
    ("utf-16-be", "UTF-16BE", "UTF-16BE (no byte-order mark)"),
    ("utf-32", "UTF-32", "UTF-32 (little-endian, with a byte-order mark)"),
]


@pytest.mark.parametrize(("codec", "source", "label"), ENCODINGS)
def test_utf16_and_utf32_files_are_named_with_the_conversion(hub_open, tmp_path, codec, source, label):
    path = tmp_path / "mine.txt"
    path.write_bytes(("\n".join(lines_of(hub_open)) + "\n").encode(codec))
    with pytest.raises(InvalidInputError) as info:
        parse_responses(path.read_bytes(), dataset=hub_open, name=path)
    message = info.value.describe()
    assert message == (
        f"{path}: file is {label} text, not UTF-8; convert it first, e.g. iconv -f {source} -t UTF-8 mine.txt > "
        "mine.utf8.txt"
    )
    assert "binary" not in message and info.value.exit_code == 3


@pytest.mark.skipif(shutil.which("iconv") is None, reason="iconv is not installed")
@pytest.mark.parametrize(("codec", "source", "label"), ENCODINGS)
def test_the_suggested_iconv_command_gives_a_file_that_is_accepted(hub_open, tmp_path, codec, source, label):
    lines = lines_of(hub_open)
    lines[3] = "中文回答 with 😀 outside the basic plane"
    path = tmp_path / "mine.txt"
    path.write_bytes(("\n".join(lines) + "\n").encode(codec))
    with pytest.raises(InvalidInputError) as info:
        parse_responses(path.read_bytes(), dataset=hub_open, name=path)
    command = info.value.message.split("e.g. ", 1)[1]
    assert command == f"iconv -f {source} -t UTF-8 mine.txt > mine.utf8.txt"
    subprocess.run(command, shell=True, cwd=tmp_path, check=True, timeout=30)
    converted = (tmp_path / "mine.utf8.txt").read_bytes()
    assert parse_responses(converted, dataset=hub_open, name="mine.utf8.txt") == lines


def test_utf16_of_text_without_ascii_is_recognised_by_its_byte_order_mark(hub_open):
    data = ("\n".join(["日本語の応答"] * len(hub_open))).encode("utf-16")
    with pytest.raises(InvalidInputError, match=r"file is UTF-16 \(little-endian, with a byte-order mark\)"):
        parse_responses(data, dataset=hub_open, name="ja.txt")


def test_a_file_name_with_spaces_is_quoted_in_the_command():
    with pytest.raises(InvalidInputError) as info:
        decode_lines("a\nb\n".encode("utf-16"), name="dir/my responses.txt")
    assert info.value.message.endswith("iconv -f UTF-16 -t UTF-8 'my responses.txt' > 'my responses.utf8.txt'")


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",  # NULs on both sides of the byte pairs
        bytes(range(256)) * 4,
        b"plain text\nwith one NUL\x00 in it\n",
    ],
)
def test_binary_files_are_still_called_binary(data):
    with pytest.raises(InvalidInputError, match=r"binary data \(NUL byte\) found; expected UTF-8 text"):
        decode_lines(data, name="r.txt")


def test_utf16_is_refused_by_the_cli_naming_the_encoding(hub_open, tmp_path):
    path = tmp_path / "win.txt"
    path.write_bytes(("\r\n".join(lines_of(hub_open)) + "\r\n").encode("utf-16"))
    result = chateval("evaluate", "--dataset", DATASET, "--responses", path)
    assert result.returncode == 3, result.stderr
    assert "file is UTF-16 (little-endian, with a byte-order mark) text, not UTF-8" in one_line(result.stderr)
    assert "iconv -f UTF-16 -t UTF-8 win.txt > win.utf8.txt" in one_line(result.stderr)


# --- blank lines ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("blank", ["", "   ", "\t", " \r"])
def test_a_blank_line_is_refused_with_its_number(hub_open, blank):
    lines = lines_of(hub_open)
    lines[41] = blank
    with pytest.raises(InvalidInputError) as info:
        parse_responses("\n".join(lines).encode(), dataset=hub_open, name="r.txt")
    assert (info.value.path, info.value.line, info.value.exit_code) == ("r.txt", 42, 3)
    assert info.value.message.startswith("blank line: an empty response; if empty responses are meant")
    allowed = parse_responses("\n".join(lines).encode(), dataset=hub_open, name="r.txt", allow_empty=True)
    assert allowed[41] == blank.removesuffix("\r") and len(allowed) == len(hub_open)


def test_the_first_blank_line_is_named(hub_open):
    lines = lines_of(hub_open)
    lines[7] = lines[99] = ""
    with pytest.raises(InvalidInputError) as info:
        parse_responses("\n".join(lines).encode(), dataset=hub_open, name="r.txt")
    assert info.value.line == 8


def test_a_wrong_line_count_points_at_a_blank_line(hub_open):
    lines = lines_of(hub_open)
    lines.insert(10, "")  # a stray blank line: one line too many
    with pytest.raises(InvalidInputError) as info:
        parse_responses("\n".join(lines).encode(), dataset=hub_open, name="r.txt")
    assert info.value.message.endswith(f"found {len(hub_open) + 1}; line 11 is blank")


def test_jsonl_empty_responses_are_written_on_purpose_and_accepted(hub_open):
    records = [f'{{"prompt_id": "{pid}", "response": ""}}' for pid in hub_open.prompt_ids]
    assert set(parse_responses("\n".join(records).encode(), dataset=hub_open, name="r.jsonl")) == {""}


def test_cli_refuses_a_blank_line_unless_allow_empty(hub_open, tmp_path):
    lines = lines_of(hub_open)
    lines[20] = ""
    path = tmp_path / "r.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused = chateval("evaluate", "--dataset", DATASET, "--responses", path, "--metrics", "avg-length")
    assert refused.returncode == 3
    assert one_line(refused.stderr) == (
        f"error: {path}, line 21: blank line: an empty response; if empty responses are meant, say so: "
        "--allow-empty (on the hub: allow_empty)"
    )
    allowed = chateval(
        "evaluate", "--dataset", DATASET, "--responses", path, "--metrics", "avg-length", "--json", "--allow-empty"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert '"per_prompt"' in allowed.stdout
