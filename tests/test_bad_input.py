"""Refused input: every bad file or option gives a documented exit code and one message naming the file,
the line and what was expected, and nothing is written into the toolkit home."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evaluation.dataset import load_dataset
from evaluation.errors import InvalidInputError
from evaluation.responses import parse_responses
from evaluation.settings import get_settings

REPO = Path(__file__).resolve().parent.parent
HUB_OPEN_DIR = REPO / "datasets" / "hub-open-v1"
N_PROMPTS = 120


def squash(text: str) -> str:
    """The text without any whitespace, so that checks do not depend on where the terminal wrapped it."""
    return "".join(text.split())


def assert_refused(result, exit_code: int, *fragments: str | Path) -> None:
    """Exit code, an `error:` line on stderr containing every fragment, nothing on stdout."""
    assert result.exit_code == exit_code, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stdout == ""
    for fragment in fragments:
        assert squash(str(fragment)) in squash(result.stderr), f"{fragment!r} not in {result.stderr!r}"


def assert_nothing_installed(home: Path) -> None:
    datasets = home / "datasets"
    assert not datasets.exists() or sorted(p.name for p in datasets.iterdir()) == []


@pytest.fixture(autouse=True)
def _nothing_written_into_home(request, chateval_home):
    """After every test in this file, whatever was refused, CHATEVAL_HOME/datasets holds nothing (tests of
    known bugs, marked xfail, check their own outcome)."""
    yield
    if request.node.get_closest_marker("xfail") is None:
        assert_nothing_installed(chateval_home)


def write_lines(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.write_bytes(("\n".join(lines) + end).encode("utf-8"))
    return path


def good_lines(n: int = N_PROMPTS) -> list[str]:
    return [f"response number {i}" for i in range(n)]


def jsonl_records(hub_open) -> list[dict]:
    return [{"prompt_id": pid, "response": f"answer {pid}"} for pid in hub_open.prompt_ids]


def write_jsonl(path: Path, rows: list) -> Path:
    text = "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def evaluate(run_cli, responses: Path, *extra: str | Path):
    return run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses, *extra)


# --- text response files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 119, 121, 240])
def test_wrong_line_count_says_expected_and_found(run_cli, tmp_path, count):
    path = write_lines(tmp_path / "r.txt", ["x"] * count)
    result = evaluate(run_cli, path)
    assert_refused(
        result, 3, f"{path}: expected 120 lines (one response per prompt of dataset hub-open-v1), found {count}"
    )


def test_empty_file_is_refused(run_cli, tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"")
    assert_refused(evaluate(run_cli, path), 3, f"{path}: file is empty")


@pytest.mark.parametrize("content", [b"\n", b"   \n\n\t\n", b"\r\n" * 120, b"\n" * 119])
def test_whitespace_only_file_is_refused_as_empty(run_cli, tmp_path, content):
    path = tmp_path / "r.txt"
    path.write_bytes(content)
    assert_refused(evaluate(run_cli, path), 3, f"{path}: file is empty")


def test_invalid_utf8_names_the_line_and_byte(run_cli, tmp_path):
    path = tmp_path / "r.txt"
    lines = [line.encode() for line in good_lines()]
    lines[2] = b"caf\xe9 au lait"  # Latin-1, not UTF-8
    path.write_bytes(b"\n".join(lines) + b"\n")
    offset = len(lines[0]) + len(lines[1]) + 2 + 3
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}, line 3: not valid UTF-8", f"byte 0xe9 at offset {offset}")


def test_invalid_utf8_on_last_line_without_newline(run_cli, tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"\n".join(line.encode() for line in good_lines(119)) + b"\n\xff\xfe")
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 120: not valid UTF-8", "byte 0xff")


def test_binary_file_names_the_line_with_the_nul_byte(run_cli, tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))  # NUL after two "\n"
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}, line 3: binary data (NUL byte) found; expected UTF-8 text")


def test_nul_byte_inside_an_otherwise_valid_file_names_its_line(run_cli, tmp_path):
    lines = good_lines()
    lines[41] = "hello\x00world"
    path = write_lines(tmp_path / "r.txt", lines)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 42: binary data (NUL byte)")


def test_line_over_configured_limit_names_the_line(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CHATEVAL_MAX_LINE_CHARS", "50")
    get_settings.cache_clear()
    lines = good_lines()
    lines[6] = "y" * 51
    path = write_lines(tmp_path / "r.txt", lines)
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}, line 7: line is 51 characters long; the limit is 50")


def test_line_over_default_limit_of_20000_chars_is_refused(run_cli, tmp_path):
    lines = good_lines()
    lines[99] = "z" * 20_001
    path = write_lines(tmp_path / "r.txt", lines)
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}, line 100: line is 20,001 characters long; the limit is 20,000")


def test_line_of_exactly_20000_chars_is_accepted(hub_open):
    lines = good_lines()
    lines[0] = "\u00e9" * 20_000  # characters, not bytes: 40,000 bytes of UTF-8
    responses = parse_responses(("\n".join(lines)).encode(), dataset=hub_open, name="r.txt")
    assert len(responses[0]) == 20_000


def test_file_over_max_bytes_is_refused_with_size_and_limit(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CHATEVAL_MAX_FILE_BYTES", "1000")
    get_settings.cache_clear()
    path = write_lines(tmp_path / "r.txt", ["abcdefghi"] * N_PROMPTS)  # 1,200 bytes
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}: file is 1,200 bytes; the limit is 1,000 bytes")
    assert "line" not in result.stderr


def test_file_of_exactly_max_bytes_is_accepted(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CHATEVAL_MAX_FILE_BYTES", "1200")
    get_settings.cache_clear()
    path = write_lines(tmp_path / "r.txt", ["abcdefghi"] * N_PROMPTS)
    assert path.stat().st_size == 1200
    result = evaluate(run_cli, path, "--metrics", "avg-length")
    assert result.exit_code == 0, result.stderr


def test_nonexistent_responses_file_is_not_found(run_cli, tmp_path):
    path = tmp_path / "missing.txt"
    assert_refused(evaluate(run_cli, path), 4, f"{path}: file not found")


def test_responses_path_that_is_a_folder_is_not_found(run_cli, tmp_path):
    assert_refused(evaluate(run_cli, tmp_path), 4, f"{tmp_path}: file not found")


# --- line endings and separators ----------------------------------------------------------------------------


def test_crlf_line_endings_are_accepted_and_stripped(run_cli, tmp_path, hub_open):
    path = tmp_path / "r.txt"
    path.write_bytes("\r\n".join(good_lines()).encode() + b"\r\n")
    assert evaluate(run_cli, path, "--metrics", "avg-length").exit_code == 0
    responses = parse_responses(path.read_bytes(), dataset=hub_open, name=path)
    assert responses == good_lines()


@pytest.mark.parametrize("end", ["", "\n"], ids=["no-final-newline", "final-newline"])
def test_final_newline_is_optional(run_cli, tmp_path, end):
    path = write_lines(tmp_path / "r.txt", good_lines(), end=end)
    result = evaluate(run_cli, path, "--metrics", "avg-length")
    assert result.exit_code == 0, result.stderr
    assert "avg-length" in result.stdout


@pytest.mark.parametrize("end", ["\n\n", "\r\n\r\n", "\n \n"])
def test_blank_extra_line_at_the_end_counts_as_a_line(run_cli, tmp_path, end):
    path = write_lines(tmp_path / "r.txt", good_lines(), end=end)
    assert_refused(evaluate(run_cli, path), 3, f"{path}: expected 120 lines", "found 121")


def test_blank_line_in_the_middle_is_an_empty_response_only_when_allowed(hub_open):
    lines = good_lines()
    lines[10] = ""
    with pytest.raises(InvalidInputError) as info:
        parse_responses("\n".join(lines).encode(), dataset=hub_open, name="r.txt")
    assert (info.value.line, info.value.exit_code) == (11, 3) and "--allow-empty" in info.value.message
    assert parse_responses("\n".join(lines).encode(), dataset=hub_open, name="r.txt", allow_empty=True)[10] == ""


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0c", "\x0b", "\r"])
def test_unicode_line_separators_stay_inside_one_response(run_cli, tmp_path, hub_open, separator):
    lines = good_lines()
    lines[4] = f"first half{separator}second half"
    path = write_lines(tmp_path / "r.txt", lines)
    responses = parse_responses(path.read_bytes(), dataset=hub_open, name=path)
    assert len(responses) == N_PROMPTS
    assert responses[4] == f"first half{separator}second half"
    assert evaluate(run_cli, path, "--metrics", "avg-length").exit_code == 0


def test_utf8_bom_is_not_part_of_the_first_response(hub_open):
    data = "\ufeff".encode() + "\n".join(good_lines()).encode()
    assert parse_responses(data, dataset=hub_open, name="r.txt")[0] == "response number 0"


def test_parse_responses_error_carries_path_and_line(hub_open):
    lines = [line.encode() for line in good_lines()]
    lines[7] = b"\xc3\x28"
    with pytest.raises(InvalidInputError) as info:
        parse_responses(b"\n".join(lines), dataset=hub_open, name="subdir/r.txt")
    assert (info.value.path, info.value.line, info.value.exit_code) == ("subdir/r.txt", 8, 3)


# --- JSONL response files ------------------------------------------------------------------------------------


def test_jsonl_in_any_order_is_accepted(run_cli, tmp_path, hub_open):
    rows = list(reversed(jsonl_records(hub_open)))
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert evaluate(run_cli, path, "--metrics", "avg-length").exit_code == 0
    responses = parse_responses(path.read_bytes(), dataset=hub_open, name=path)
    assert responses[0] == "answer hov1-001"


def test_jsonl_unknown_prompt_id_names_the_line(run_cli, tmp_path, hub_open):
    rows = jsonl_records(hub_open)
    rows[4]["prompt_id"] = "hov1-999"
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 5: unknown prompt_id 'hov1-999' for dataset hub-open-v1")


def test_jsonl_duplicate_prompt_id_names_both_lines(run_cli, tmp_path, hub_open):
    rows = jsonl_records(hub_open)
    rows[9]["prompt_id"] = rows[2]["prompt_id"]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}, line 10: duplicate prompt_id 'hov1-003' (first on line 3)")


def test_jsonl_missing_ids_are_counted_and_listed(run_cli, tmp_path, hub_open):
    rows = jsonl_records(hub_open)[:-7]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    result = evaluate(run_cli, path)
    assert_refused(
        result,
        3,
        f"{path}: 7 of 120 prompts of dataset hub-open-v1 have no entry: "
        "'hov1-114', 'hov1-115', 'hov1-116', 'hov1-117', 'hov1-118' ...",
    )


def test_jsonl_single_missing_id_is_listed_without_ellipsis(run_cli, tmp_path, hub_open):
    rows = jsonl_records(hub_open)
    del rows[0]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    result = evaluate(run_cli, path)
    assert_refused(result, 3, "1 of 120 prompts of dataset hub-open-v1 have no entry: 'hov1-001'")
    assert "..." not in result.stderr


@pytest.mark.parametrize(
    "line",
    ['["hov1-003", "hi"]', '"hov1-003"', "42", "null"],
    ids=["array", "string", "number", "null"],
)
def test_jsonl_non_object_line_is_refused(run_cli, tmp_path, hub_open, line):
    rows: list = jsonl_records(hub_open)
    rows[2] = line
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 3: each line must be a JSON object")


@pytest.mark.parametrize(
    "line",
    ['{"prompt_id": "hov1-006", "response": "hi"', "{'prompt_id': 'hov1-006', 'response': 'hi'}", "plain text"],
    ids=["truncated", "single-quotes", "plain-text"],
)
def test_jsonl_invalid_json_names_the_line(run_cli, tmp_path, hub_open, line):
    rows: list = jsonl_records(hub_open)
    rows[5] = line
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 6: not valid JSON (")


def test_jsonl_extra_key_is_refused_and_named(run_cli, tmp_path, hub_open):
    rows = jsonl_records(hub_open)
    rows[7]["score"] = 0.5
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(
        evaluate(run_cli, path),
        3,
        f"{path}, line 8: each line needs exactly the keys 'prompt_id' and 'response' (unexpected: score)",
    )


@pytest.mark.parametrize("missing", ["prompt_id", "response"])
def test_jsonl_missing_key_is_refused(run_cli, tmp_path, hub_open, missing):
    rows = jsonl_records(hub_open)
    del rows[1][missing]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    result = evaluate(run_cli, path)
    assert_refused(result, 3, f"{path}, line 2: each line needs exactly the keys 'prompt_id' and 'response'")
    assert "unexpected" not in result.stderr


@pytest.mark.parametrize(("value", "message"), [(7, "'response' must be a string"), (None, "'response' must be")])
def test_jsonl_non_string_response_is_refused(run_cli, tmp_path, hub_open, value, message):
    rows = jsonl_records(hub_open)
    rows[0]["response"] = value
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 1: {message}")


def test_jsonl_non_string_prompt_id_is_refused(run_cli, tmp_path, hub_open):
    rows = jsonl_records(hub_open)
    rows[0]["prompt_id"] = ["hov1-001"]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 1: 'prompt_id' must be a string")


def test_jsonl_response_may_contain_newlines_and_line_separators(hub_open, tmp_path):
    rows = jsonl_records(hub_open)
    rows[3]["response"] = "two\nlines\u2028and more"
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert parse_responses(path.read_bytes(), dataset=hub_open, name=path)[3] == "two\nlines\u2028and more"


def test_format_option_forces_jsonl_for_a_txt_name(run_cli, tmp_path, hub_open):
    path = write_jsonl(tmp_path / "r.txt", jsonl_records(hub_open))
    assert evaluate(run_cli, path, "--metrics", "avg-length", "--format", "jsonl").exit_code == 0
    # Without --format the same file is read as text: 120 lines of JSON, each one a "response".
    assert evaluate(run_cli, path, "--metrics", "avg-length").exit_code == 0


def test_jsonl_integer_prompt_id_too_long_to_convert_is_refused_by_line(run_cli, tmp_path, hub_open):
    rows: list = jsonl_records(hub_open)
    rows[1] = '{"prompt_id": ' + "1" * 5000 + ', "response": "x"}'
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert_refused(evaluate(run_cli, path), 3, f"{path}, line 2: not valid JSON (")


# --- log-likelihood files ------------------------------------------------------------------------------------


def loglik_rows(hub_open) -> list[dict]:
    return [{"prompt_id": pid, "logprob": -12.5, "tokens": 5} for pid in hub_open.prompt_ids]


def run_with_loglik(run_cli, tmp_path, rows, *extra):
    responses = write_lines(tmp_path / "r.txt", good_lines())
    loglik = write_jsonl(tmp_path / "ll.jsonl", rows)
    return loglik, run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses, "--loglik", loglik, *extra)


def test_valid_loglik_file_gives_perplexity(run_cli, tmp_path, hub_open):
    _, result = run_with_loglik(run_cli, tmp_path, loglik_rows(hub_open), "--metrics", "perplexity")
    assert result.exit_code == 0, result.stderr
    assert "perplexity" in result.stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"logprob": 0.5}, "'logprob' is 0.5, but a log-probability cannot be positive"),
        ({"tokens": 0}, "'tokens' is 0; it must be a whole number from 1 to 1,000,000"),
        ({"tokens": -3}, "'tokens' is -3; it must be a whole number from 1 to 1,000,000"),
        ({"tokens": 2.5}, "'tokens' is 2.5; it must be a whole number from 1 to 1,000,000"),
        ({"tokens": "5"}, "'tokens' is '5'; it must be a whole number from 1 to 1,000,000"),
        ({"tokens": True}, "'tokens' is True; it must be a whole number from 1 to 1,000,000"),
        ({"logprob": "-1.5"}, "'logprob' must be a finite number"),
        ({"logprob": "NaN"}, "'logprob' must be a finite number"),
        ({"logprob": None}, "'logprob' must be a finite number"),
        ({"logprob": False}, "'logprob' must be a finite number"),
        ({"prompt_id": "hov1-000"}, "unknown prompt_id 'hov1-000' for dataset hub-open-v1"),
    ],
)
def test_bad_loglik_value_names_the_line(run_cli, tmp_path, hub_open, change, message):
    rows = loglik_rows(hub_open)
    rows[2].update(change)
    loglik, result = run_with_loglik(run_cli, tmp_path, rows)
    assert_refused(result, 3, f"{loglik}, line 3: {message}")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "-1e400"])
def test_loglik_non_finite_json_literals_are_refused(run_cli, tmp_path, hub_open, literal):
    rows: list = loglik_rows(hub_open)
    rows[3] = '{"prompt_id": "hov1-004", "logprob": ' + literal + ', "tokens": 5}'
    loglik, result = run_with_loglik(run_cli, tmp_path, rows)
    assert_refused(result, 3, f"{loglik}, line 4: 'logprob' must be a finite number")


@pytest.mark.parametrize("key", ["prompt_id", "logprob", "tokens"])
def test_loglik_missing_key_is_named(run_cli, tmp_path, hub_open, key):
    rows = loglik_rows(hub_open)
    del rows[5][key]
    loglik, result = run_with_loglik(run_cli, tmp_path, rows)
    assert_refused(result, 3, f"{loglik}, line 6: missing key(s): {key}")


def test_loglik_duplicate_and_missing_ids(run_cli, tmp_path, hub_open):
    rows = loglik_rows(hub_open)
    loglik, result = run_with_loglik(run_cli, tmp_path, [*rows, rows[0]])
    assert_refused(result, 3, f"{loglik}, line 121: duplicate prompt_id 'hov1-001' (first on line 1)")
    loglik, result = run_with_loglik(run_cli, tmp_path, rows[1:])
    assert_refused(result, 3, f"{loglik}: 1 of 120 prompts of dataset hub-open-v1 have no entry: 'hov1-001'")


def test_missing_loglik_file_is_not_found(run_cli, tmp_path):
    responses = write_lines(tmp_path / "r.txt", good_lines())
    missing = tmp_path / "nope.jsonl"
    result = run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses, "--loglik", missing)
    assert_refused(result, 4, f"{missing}: file not found")


@pytest.mark.parametrize("tokens", [1_000_001, 2**62, 2**63 - 1, 2**63, 10**30])
def test_loglik_token_count_beyond_the_bound_is_refused(run_cli, tmp_path, hub_open, tokens):
    """Near 2**63 the count was accepted and the corpus perplexity wrapped (sum of int64) or crashed."""
    rows = loglik_rows(hub_open)
    rows[1]["tokens"] = tokens
    loglik, result = run_with_loglik(run_cli, tmp_path, rows, "--metrics", "perplexity")
    assert_refused(result, 3, f"{loglik}, line 2: 'tokens' is {tokens}; it must be a whole number from 1 to 1,000,000")


def test_loglik_token_count_at_the_bound_is_accepted(hub_open):
    from evaluation.loglik import parse_loglik

    rows = loglik_rows(hub_open)
    for row in rows:
        row["tokens"] = 1_000_000
    data = "\n".join(json.dumps(row) for row in rows).encode()
    parsed = parse_loglik(data, dataset=hub_open, name="ll.jsonl")
    assert int(parsed.tokens.sum()) == 1_000_000 * len(rows)


def test_loglik_huge_integer_logprob_is_refused_by_line(run_cli, tmp_path, hub_open):
    rows: list = loglik_rows(hub_open)
    rows[0] = '{"prompt_id": "hov1-001", "logprob": -1' + "0" * 400 + ', "tokens": 5}'
    loglik, result = run_with_loglik(run_cli, tmp_path, rows)
    assert_refused(result, 3, f"{loglik}, line 1: 'logprob' must be a finite number")


# --- datasets ---------------------------------------------------------------------------------------------------


@pytest.fixture
def dataset_copy(tmp_path) -> Path:
    folder = tmp_path / "copy"
    shutil.copytree(HUB_OPEN_DIR, folder)
    return folder


def reseal_manifest(folder: Path) -> None:
    """Make the manifest's checksum match the (edited) prompts file, as a careful editor would."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["prompts_sha256"] = hashlib.sha256((folder / "prompts.jsonl").read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def replace_prompt_line(folder: Path, number: int, line: str) -> None:
    lines = (folder / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    lines[number - 1] = line
    (folder / "prompts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_unknown_dataset_name_lists_installed_datasets(run_cli, tmp_path):
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", "hub-open-v9", "--responses", path)
    assert_refused(result, 4, "dataset 'hub-open-v9' not found (installed:", "hub-open-v1", "chateval datasets list")


def test_dataset_copy_loads_from_a_folder_path(run_cli, tmp_path, dataset_copy):
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path, "--metrics", "avg-length")
    assert result.exit_code == 0, result.stderr


def test_edited_prompt_gives_checksum_mismatch(run_cli, tmp_path, dataset_copy):
    prompts = dataset_copy / "prompts.jsonl"
    prompts.write_text(prompts.read_text(encoding="utf-8").replace("What is two plus two?", "What is 2+2?"))
    expected = json.loads((dataset_copy / "manifest.json").read_text())["prompts_sha256"]
    actual = hashlib.sha256(prompts.read_bytes()).hexdigest()
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(result, 3, f"{prompts}: checksum mismatch: manifest says sha256 {expected}, file has {actual}")


def test_manifest_missing_field_is_named(run_cli, tmp_path, dataset_copy):
    manifest = json.loads((dataset_copy / "manifest.json").read_text())
    del manifest["license"]
    (dataset_copy / "manifest.json").write_text(json.dumps(manifest))
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(result, 3, f"{dataset_copy / 'manifest.json'}: invalid manifest: license: Field required")


def test_manifest_unknown_field_is_refused(run_cli, tmp_path, dataset_copy):
    manifest = json.loads((dataset_copy / "manifest.json").read_text())
    manifest["licence"] = manifest["license"]
    (dataset_copy / "manifest.json").write_text(json.dumps(manifest))
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(result, 3, f"{dataset_copy / 'manifest.json'}: invalid manifest: licence:")


def test_manifest_bad_json_is_refused(run_cli, tmp_path, dataset_copy):
    (dataset_copy / "manifest.json").write_text('{"name": "hub-open-v1",')
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(result, 3, f"{dataset_copy / 'manifest.json'}: manifest is not valid JSON (")


def test_dataset_folder_without_prompts_is_not_found(run_cli, tmp_path, dataset_copy):
    (dataset_copy / "prompts.jsonl").unlink()
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(result, 4, f"{dataset_copy}: no prompts.jsonl in dataset folder")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json at all", "invalid prompt: Invalid JSON"),
        ('{"id": "hov1-005", "context": [], "references": ["a"]}', "invalid prompt: context:"),
        (
            '{"id": "hov1-005", "context": [{"role": "assistant", "content": "hi"}], "references": ["a"]}',
            "invalid prompt: context: Value error, the last context turn must have role 'user'",
        ),
        (
            '{"id": "hov1-005", "context": [{"role": "user", "content": "hi"}], "references": []}',
            "invalid prompt: references: Tuple should have at least 1 item",
        ),
        (
            '{"id": "hov1-001", "context": [{"role": "user", "content": "hi"}], "references": ["a"]}',
            "duplicate prompt id",
        ),
    ],
    ids=["not-json", "empty-context", "ends-with-assistant", "no-references", "duplicate-id"],
)
def test_malformed_prompts_line_is_named(run_cli, tmp_path, dataset_copy, line, message):
    replace_prompt_line(dataset_copy, 5, line)
    reseal_manifest(dataset_copy)
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(result, 3, f"{dataset_copy / 'prompts.jsonl'}, line 5: {message}")


def test_duplicate_prompt_id_in_dataset_names_both_lines(run_cli, tmp_path, dataset_copy):
    replace_prompt_line(
        dataset_copy, 5, '{"id": "hov1-002", "context": [{"role": "user", "content": "hi"}], "references": ["a"]}'
    )
    reseal_manifest(dataset_copy)
    path = write_lines(tmp_path / "r.txt", good_lines())
    result = run_cli("evaluate", "--dataset", dataset_copy, "--responses", path)
    assert_refused(
        result, 3, f"{dataset_copy / 'prompts.jsonl'}, line 5: duplicate prompt id 'hov1-002' (first on line 2)"
    )


# --- metrics, vectors and options -------------------------------------------------------------------------------


@pytest.fixture
def wide_terminal(monkeypatch):
    """Rich lays tables out for the terminal width (fixed at import when COLUMNS is set); a wide stdout keeps
    every cell on one line whatever terminal the tests run in."""
    from evaluation.cli import console

    monkeypatch.setattr(console.out, "_width", 250)


@pytest.fixture
def responses_file(tmp_path) -> Path:
    return write_lines(tmp_path / "r.txt", good_lines())


@pytest.mark.parametrize("name", ["vectors.kv", "vectors.txt", "vectors.bin"])
def test_garbage_vectors_file_is_refused(run_cli, tmp_path, responses_file, name):
    vectors = tmp_path / name
    vectors.write_bytes(b"this is not a word vector file\n\x01\x02\x03 at all\n")
    result = evaluate(run_cli, responses_file, "--metrics", "embedding-average", "--embeddings", vectors)
    assert_refused(result, 3, f"{vectors}: cannot read word vectors (expected gensim KeyedVectors")


def test_missing_vectors_file_is_not_found(run_cli, tmp_path, responses_file):
    vectors = tmp_path / "absent.kv"
    result = evaluate(run_cli, responses_file, "--metrics", "embedding-average", "--embeddings", vectors)
    assert_refused(result, 4, f"{vectors}: word vectors file not found")


def test_requested_embedding_average_without_vectors_is_a_configuration_error(run_cli, responses_file):
    result = evaluate(run_cli, responses_file, "--metrics", "embedding-average")
    assert_refused(result, 5, "embedding-average: no word vectors configured (pass --embeddings PATH)")


def test_requested_perplexity_without_loglik_is_a_configuration_error(run_cli, responses_file):
    result = evaluate(run_cli, responses_file, "--metrics", "perplexity")
    assert_refused(result, 5, "perplexity: no reference log-likelihood file given (pass --loglik FILE)")


def test_default_metrics_without_optional_inputs_report_them_unavailable(run_cli, responses_file, wide_terminal):
    result = evaluate(run_cli, responses_file)
    assert result.exit_code == 0, result.stderr
    assert "no word vectors configured" in result.stdout
    assert "no reference log-likelihood file given" in result.stdout


@pytest.mark.parametrize("spec", ["rouge-l", "bleu", "distinct-x", "distinct-"])
def test_unknown_metric_lists_available(run_cli, responses_file, spec):
    result = evaluate(run_cli, responses_file, "--metrics", spec)
    assert_refused(result, 4, f"unknown metric '{spec}' (available:")
    for name in ("avg-length", "bleu-N", "distinct-N", "embedding-average", "perplexity"):
        assert name in squash(result.stderr)


def test_unknown_metric_in_comma_list_is_refused(run_cli, responses_file):
    result = evaluate(run_cli, responses_file, "--metrics", "distinct-1,nope")
    assert_refused(result, 4, "unknown metric 'nope'")


def test_unknown_compat_name_lists_known(run_cli, responses_file):
    result = evaluate(run_cli, responses_file, "--compat", "chateval-2018")
    assert_refused(result, 4, "unknown compatibility configuration 'chateval-2018' (known:", "chateval-2019")


def usage_text(result) -> str:
    """Typer prints usage errors in a box; without whitespace and box edges the message reads as one."""
    return squash(result.stderr.replace("│", ""))


def test_missing_required_option_is_a_usage_error(run_cli, responses_file):
    result = run_cli("evaluate", "--responses", responses_file)
    assert result.exit_code == 2
    assert squash("Usage: chateval evaluate [OPTIONS]") in usage_text(result)
    assert squash("Missing option '--dataset'") in usage_text(result)


def test_bad_format_choice_is_a_usage_error(run_cli, responses_file):
    result = evaluate(run_cli, responses_file, "--format", "csv")
    assert result.exit_code == 2
    assert squash("Invalid value for '--format'") in usage_text(result)
    assert squash("'csv' is not one of 'auto', 'text', 'jsonl'") in usage_text(result)


def test_unknown_command_is_a_usage_error(run_cli):
    result = run_cli("evaluat")
    assert result.exit_code == 2
    assert squash("No such command 'evaluat'") in usage_text(result)


def test_help_exits_zero(run_cli):
    result = run_cli("evaluate", "--help")
    assert result.exit_code == 0
    assert squash("Usage: chateval evaluate [OPTIONS]") in squash(result.stdout)
    assert squash("Score a response file against a dataset.") in squash(result.stdout.replace("│", ""))


def test_error_message_is_a_single_line_on_stderr(run_cli, tmp_path, monkeypatch):
    from evaluation.cli import console

    monkeypatch.setattr(console.err, "_width", 80)  # as when stderr is piped
    folder = tmp_path / ("long-folder-name-" * 12)
    folder.mkdir()
    path = write_lines(folder / "responses.txt", good_lines(119))
    result = evaluate(run_cli, path)
    assert result.exit_code == 3
    assert result.stderr == (
        f"error: {path}: expected 120 lines (one response per prompt of dataset hub-open-v1), found 119\n"
    )


# --- nothing is written on refusal --------------------------------------------------------------------------------


def test_refused_import_text_leaves_no_folder(run_cli, tmp_path, chateval_home):
    prompts = write_lines(tmp_path / "p.txt", ["hi", "how are you", "bye"])
    references = write_lines(tmp_path / "ref.txt", ["hello", "fine"])
    result = run_cli("datasets", "import-text", "--name", "small", "--prompts", prompts, "--references", references)
    assert_refused(result, 3, f"{references}: has 2 lines but the prompts file {prompts} has 3")
    assert_nothing_installed(chateval_home)


def test_import_text_invalid_name_leaves_no_partial_folder(run_cli, tmp_path, chateval_home):
    prompts = write_lines(tmp_path / "p.txt", ["hi"])
    references = write_lines(tmp_path / "ref.txt", ["hello"])
    result = run_cli("datasets", "import-text", "--name", "Bad_Name", "--prompts", prompts, "--references", references)
    assert_refused(result, 3, "invalid dataset metadata: name: String should match pattern")
    assert_nothing_installed(chateval_home)


def test_import_text_name_with_slash_leaves_nothing_behind(run_cli, tmp_path, chateval_home):
    prompts = write_lines(tmp_path / "p.txt", ["hi"])
    references = write_lines(tmp_path / "ref.txt", ["hello"])
    result = run_cli("datasets", "import-text", "--name", "a/b", "--prompts", prompts, "--references", references)
    assert_refused(result, 3, "invalid dataset metadata: name: String should match pattern")
    assert_nothing_installed(chateval_home)


def test_refused_evaluate_inputs_install_nothing(run_cli, tmp_path, chateval_home, dataset_copy):
    (dataset_copy / "prompts.jsonl").write_text("{}\n")
    responses = write_lines(tmp_path / "r.txt", good_lines(3))
    assert run_cli("evaluate", "--dataset", dataset_copy, "--responses", responses).exit_code == 3
    assert run_cli("evaluate", "--dataset", "hub-open-v1", "--responses", responses).exit_code == 3
    assert run_cli("evaluate", "--dataset", "ncm", "--responses", responses).exit_code == 4
    assert_nothing_installed(chateval_home)
    assert load_dataset("hub-open-v1").fingerprint.startswith("hub-open-v1@")
