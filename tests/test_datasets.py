"""Datasets: the shipped set, `chateval datasets list/show/import-text/rehash`, and the real ChatEval sets."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from evaluation.dataset import load_dataset, load_dataset_dir
from evaluation.errors import InvalidInputError
from evaluation.text_import import import_text

REPO = Path(__file__).resolve().parent.parent
HUB_OPEN_DIR = REPO / "datasets" / "hub-open-v1"
FETCHABLE = ("dbdc", "ncm", "os", "twitter")


def squash(text: str) -> str:
    return "".join(text.split())


def write_lines(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.write_bytes(("\n".join(lines) + end).encode("utf-8"))
    return path


def table_rows(stdout: str) -> dict[str, list[str]]:
    """Rows of a rich table by their first cell (continuation lines of wrapped cells are skipped)."""
    rows = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if cells and cells[0]:
            rows[cells[0]] = cells
    return rows


@pytest.fixture
def wide_terminal(monkeypatch):
    """Rich lays tables out for the terminal width (fixed at import when COLUMNS is set); a wide stdout keeps
    every cell on one line whatever terminal the tests run in."""
    from evaluation.cli import console

    monkeypatch.setattr(console.out, "_width", 250)


@pytest.fixture
def small_files(tmp_path) -> tuple[Path, Path, Path]:
    prompts = write_lines(tmp_path / "prompts.txt", ["hello there !", "how are you ?", "bye"])
    first = write_lines(tmp_path / "refs1.txt", ["hi !", "fine , thanks .", "see you"])
    second = write_lines(tmp_path / "refs2.txt", ["hey", "good , you ?", "bye bye "], end="")
    return prompts, first, second


def import_small(run_cli, small_files, *extra: str | Path, name: str = "small"):
    prompts, first, second = small_files
    return run_cli(
        "datasets", "import-text", "--name", name, "--prompts", prompts, "--references", first,
        "--references", second, *extra,
    )  # fmt: skip


# --- the shipped set ------------------------------------------------------------------------------------------


def test_shipped_hub_open_loads_with_120_prompts(hub_open):
    assert hub_open.name == "hub-open-v1"
    assert hub_open.manifest.version == "1.0.0"
    assert hub_open.manifest.license == "CC-BY-4.0"
    assert len(hub_open) == 120
    assert hub_open.path == HUB_OPEN_DIR


def test_hub_open_ids_are_unique_and_ordered(hub_open):
    assert hub_open.prompt_ids == tuple(f"hov1-{i:03d}" for i in range(1, 121))
    assert hub_open.index_of["hov1-001"] == 0
    assert hub_open.index_of["hov1-120"] == 119


def test_every_hub_open_prompt_has_at_least_two_nonempty_references(hub_open):
    for prompt in hub_open.prompts:
        assert len(prompt.references) >= 2, prompt.id
        assert all(reference.strip() for reference in prompt.references), prompt.id
    assert hub_open.references[0] == ("Hey there! How's your day going?", "Hi! Nice to hear from you, what's up?")


def test_hub_open_has_multi_turn_contexts_alternating_and_ending_with_user(hub_open):
    multi = [p for p in hub_open.prompts if len(p.context) > 1]
    assert len(multi) == 40  # as the manifest says: 80 single-turn, 40 multi-turn
    for prompt in multi:
        roles = [turn.role for turn in prompt.context]
        assert roles[-1] == "user", prompt.id
        assert roles == ["user" if (len(roles) - 1 - i) % 2 == 0 else "assistant" for i in range(len(roles))]
    assert all(p.context[0].role == "user" for p in hub_open.prompts if len(p.context) == 1)


def test_fingerprint_is_name_version_and_checksum_prefix(hub_open):
    actual = hashlib.sha256((HUB_OPEN_DIR / "prompts.jsonl").read_bytes()).hexdigest()
    assert actual == hub_open.manifest.prompts_sha256
    assert hub_open.fingerprint == f"hub-open-v1@1.0.0#{actual[:12]}"
    assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*@[^#]+#[0-9a-f]{12}", hub_open.fingerprint)


def test_loading_by_folder_path_equals_loading_by_name(hub_open):
    by_path = load_dataset(HUB_OPEN_DIR)
    assert by_path.fingerprint == hub_open.fingerprint
    assert by_path.prompts == hub_open.prompts


# --- datasets list / show ------------------------------------------------------------------------------------


def test_list_shows_hub_open_and_the_four_fetchable_sets_as_not_fetched(run_cli, wide_terminal):
    result = run_cli("datasets", "list")
    assert result.exit_code == 0, result.stderr
    rows = table_rows(result.stdout)
    assert rows["hub-open-v1"] == ["hub-open-v1", "1.0.0", "120", "ok", str(HUB_OPEN_DIR)]
    for name in FETCHABLE:
        assert rows[name] == [name, "", "", f"not fetched: `chateval datasets fetch {name}`", ""]


def test_list_shows_an_imported_dataset_as_ok(run_cli, small_files, wide_terminal, chateval_home):
    assert import_small(run_cli, small_files).exit_code == 0
    rows = table_rows(run_cli("datasets", "list").stdout)
    assert rows["small"] == ["small", "1.0.0", "3", "ok", str(chateval_home / "datasets" / "small")]


def test_list_marks_a_tampered_dataset_broken_and_still_lists_the_others(
    run_cli, small_files, wide_terminal, chateval_home
):
    assert import_small(run_cli, small_files).exit_code == 0
    prompts = chateval_home / "datasets" / "small" / "prompts.jsonl"
    prompts.write_text(prompts.read_text().replace("bye bye ", "ciao"))
    result = run_cli("datasets", "list")
    assert result.exit_code == 0
    rows = table_rows(result.stdout)
    assert rows["small"][:3] == ["small", "?", "?"]
    assert rows["small"][3].startswith("broken: checksum mismatch")
    assert rows["hub-open-v1"][3] == "ok"


def test_show_prints_manifest_and_first_two_prompts(run_cli, hub_open):
    result = run_cli("datasets", "show", "hub-open-v1", "--prompts", "2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"hub-open-v1 1.0.0  (120 prompts, {hub_open.fingerprint})"
    assert lines[1] == f"description: {hub_open.manifest.description}"
    assert "license: CC-BY-4.0" in lines
    assert lines[-10:] == [
        "",
        "hov1-001",
        "  user: Hi!",
        "  reference: Hey there! How's your day going?",
        "  reference: Hi! Nice to hear from you, what's up?",
        "",
        "hov1-002",
        "  user: What is your name?",
        "  reference: People usually just call me Sky. What's yours?",
        "  reference: Nothing fancy, you can call me Jo.",
    ]
    assert "hov1-003" not in result.stdout


def test_show_prints_every_turn_of_a_multi_turn_prompt(run_cli, hub_open):
    result = run_cli("datasets", "show", "hub-open-v1", "--prompts", "4")
    assert result.exit_code == 0
    fourth = result.stdout.split("\nhov1-004\n")[1].splitlines()
    expected = [f"  {t.role}: {t.content}" for t in hub_open.prompts[3].context]
    expected += [f"  reference: {r}" for r in hub_open.prompts[3].references]
    assert fourth == expected
    assert [line.split(":")[0].strip() for line in fourth[:3]] == ["user", "assistant", "user"]


def test_show_unknown_dataset_is_not_found(run_cli):
    result = run_cli("datasets", "show", "nope")
    assert result.exit_code == 4
    assert squash("error: dataset 'nope' not found (installed:") in squash(result.stderr)
    assert "hub-open-v1" in result.stderr


# --- import-text ------------------------------------------------------------------------------------------------


def test_import_text_writes_a_dataset_into_the_home(run_cli, small_files, chateval_home):
    result = import_small(run_cli, small_files)
    assert result.exit_code == 0, result.stderr
    folder = chateval_home / "datasets" / "small"
    data = load_dataset_dir(folder)
    assert result.stdout == f"imported 3 prompts into {folder} ({data.fingerprint})\n"
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "prompts.jsonl"]
    assert sorted(p.name for p in (chateval_home / "datasets").iterdir()) == ["small"]


def test_import_text_ids_are_zero_based_line_numbers_and_references_keep_order(run_cli, small_files):
    assert import_small(run_cli, small_files).exit_code == 0
    data = load_dataset("small")
    assert data.prompt_ids == ("0", "1", "2")
    assert [[(t.role, t.content) for t in p.context] for p in data.prompts] == [
        [("user", "hello there !")],
        [("user", "how are you ?")],
        [("user", "bye")],
    ]
    assert data.references == (("hi !", "hey"), ("fine , thanks .", "good , you ?"), ("see you", "bye bye "))


def test_import_text_records_the_metadata_options(run_cli, small_files):
    extra = ("--version", "2.1", "--description", "tiny", "--source", "hand-made", "--license", "CC0-1.0")
    assert import_small(run_cli, small_files, *extra, "--citation", "Me 2026").exit_code == 0
    manifest = load_dataset("small").manifest
    assert (manifest.version, manifest.description, manifest.source, manifest.license, manifest.citation) == (
        "2.1",
        "tiny",
        "hand-made",
        "CC0-1.0",
        "Me 2026",
    )


def test_turn_separator_gives_alternating_roles_ending_with_user(run_cli, tmp_path):
    prompts = write_lines(
        tmp_path / "p.txt",
        [
            "hi there",
            "hello __eou__ hi , how are you ?",
            "hello __eou__ hi , how are you ? __eou__ good thanks , you ?",
            "a __eou__ b __eou__ c __eou__ d",
        ],
    )
    references = write_lines(tmp_path / "r.txt", ["r0", "r1", "r2", "r3"])
    result = run_cli(
        "datasets", "import-text", "--name", "turns", "--prompts", prompts, "--references", references,
        "--turn-separator", " __eou__ ",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    contexts = [[(t.role, t.content) for t in p.context] for p in load_dataset("turns").prompts]
    assert contexts == [
        [("user", "hi there")],
        [("assistant", "hello"), ("user", "hi , how are you ?")],
        [("user", "hello"), ("assistant", "hi , how are you ?"), ("user", "good thanks , you ?")],
        [("assistant", "a"), ("user", "b"), ("assistant", "c"), ("user", "d")],
    ]


def test_without_separator_the_whole_line_is_one_user_turn(run_cli, tmp_path):
    prompts = write_lines(tmp_path / "p.txt", ["hello __eou__ hi"])
    references = write_lines(tmp_path / "r.txt", ["r0"])
    result = run_cli("datasets", "import-text", "--name", "one", "--prompts", prompts, "--references", references)
    assert result.exit_code == 0
    assert [(t.role, t.content) for t in load_dataset("one").prompts[0].context] == [("user", "hello __eou__ hi")]


def test_import_refuses_references_with_a_different_line_count(run_cli, tmp_path, chateval_home):
    prompts = write_lines(tmp_path / "p.txt", ["a", "b", "c", "d"])
    good = write_lines(tmp_path / "good.txt", ["1", "2", "3", "4"])
    short = write_lines(tmp_path / "short.txt", ["1", "2", "3"])
    result = run_cli(
        "datasets", "import-text", "--name", "x", "--prompts", prompts, "--references", good, "--references", short
    )
    assert result.exit_code == 3
    assert squash(f"error: {short}: has 3 lines but the prompts file {prompts} has 4") in squash(result.stderr)
    assert not (chateval_home / "datasets" / "x").exists()


@pytest.mark.parametrize("empty", ["", "   ", "\t"])
def test_import_refuses_an_empty_prompt_line_and_names_it(run_cli, tmp_path, chateval_home, empty):
    prompts = write_lines(tmp_path / "p.txt", ["a", empty, "c"])
    references = write_lines(tmp_path / "r.txt", ["1", "2", "3"])
    result = run_cli("datasets", "import-text", "--name", "x", "--prompts", prompts, "--references", references)
    assert result.exit_code == 3
    assert squash(f"error: {prompts}, line 2: empty prompt") in squash(result.stderr)
    assert not (chateval_home / "datasets" / "x").exists()


def test_import_refuses_an_output_folder_that_already_exists(run_cli, small_files, tmp_path):
    out = tmp_path / "existing"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = import_small(run_cli, small_files, "--out", out)
    assert result.exit_code == 3
    assert squash(f"error: {out}: output folder already exists; choose another or remove it") in squash(result.stderr)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
    assert not (tmp_path / ".existing.partial").exists()


def test_import_twice_under_the_same_name_is_refused_and_keeps_the_first(run_cli, small_files, chateval_home):
    assert import_small(run_cli, small_files).exit_code == 0
    before = load_dataset("small").fingerprint
    result = import_small(run_cli, small_files, "--version", "9")
    assert result.exit_code == 3
    folder = chateval_home / "datasets" / "small"
    assert squash(f"error: {folder}: output folder already exists") in squash(result.stderr)
    assert load_dataset("small").fingerprint == before


def test_import_to_an_explicit_out_folder_loads_by_path(run_cli, small_files, tmp_path, chateval_home):
    out = tmp_path / "elsewhere" / "small"
    result = import_small(run_cli, small_files, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert len(load_dataset(out)) == 3
    assert not (chateval_home / "datasets" / "small").exists()


def test_import_text_library_refuses_no_reference_files(tmp_path):
    prompts = write_lines(tmp_path / "p.txt", ["a"])
    fields = dict(name="x", version="1", description="", source="", license="", citation="")
    with pytest.raises(InvalidInputError, match="at least one references file is needed"):
        import_text(out=tmp_path / "x", prompts_path=prompts, reference_paths=[], manifest_fields=fields)
    assert not (tmp_path / "x").exists()


def test_imported_dataset_round_trips_through_evaluate(run_cli, small_files, tmp_path):
    assert import_small(run_cli, small_files).exit_code == 0
    responses = write_lines(tmp_path / "responses.txt", ["hi !", "fine , thanks .", "see you"])
    result = run_cli("evaluate", "--dataset", "small", "--responses", responses, "--metrics", "avg-length", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dataset"] == load_dataset("small").fingerprint
    assert report["prompts"] == 3
    assert report["prompt_ids"] == ["0", "1", "2"]


def test_imported_prompts_file_is_what_the_manifest_checksums(run_cli, small_files, chateval_home):
    assert import_small(run_cli, small_files).exit_code == 0
    folder = chateval_home / "datasets" / "small"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["prompts_sha256"] == hashlib.sha256((folder / "prompts.jsonl").read_bytes()).hexdigest()
    assert manifest["name"] == "small"
    assert len((folder / "prompts.jsonl").read_text().splitlines()) == 3


# --- rehash -------------------------------------------------------------------------------------------------------


def test_rehash_after_a_deliberate_edit_makes_the_dataset_load_again(run_cli, small_files, chateval_home):
    assert import_small(run_cli, small_files).exit_code == 0
    folder = chateval_home / "datasets" / "small"
    prompts = folder / "prompts.jsonl"
    prompts.write_text(prompts.read_text().replace('"see you"', '"see you soon"'))
    broken = run_cli("datasets", "show", "small")
    assert broken.exit_code == 3
    assert "checksum mismatch" in broken.stderr

    result = run_cli("datasets", "rehash", folder)
    assert result.exit_code == 0, result.stderr
    data = load_dataset("small")
    assert result.stdout == f"{data.fingerprint}: 3 prompts verified\n"
    assert data.references[2] == ("see you soon", "bye bye ")
    assert data.manifest.prompts_sha256 == hashlib.sha256(prompts.read_bytes()).hexdigest()
    assert run_cli("datasets", "show", "small").exit_code == 0


def test_rehash_refuses_a_broken_prompt_line_and_leaves_the_manifest(run_cli, small_files, chateval_home):
    assert import_small(run_cli, small_files).exit_code == 0
    folder = chateval_home / "datasets" / "small"
    manifest_before = (folder / "manifest.json").read_bytes()
    with (folder / "prompts.jsonl").open("a") as handle:
        handle.write('{"id": "3", "context": [], "references": ["x"]}\n')
    result = run_cli("datasets", "rehash", folder)
    assert result.exit_code == 3
    assert squash(f"error: {folder / 'prompts.jsonl'}, line 4: invalid prompt: context:") in squash(result.stderr)
    assert (folder / "manifest.json").read_bytes() == manifest_before


# --- the real ChatEval sets ---------------------------------------------------------------------------------------

REAL_SETS = {
    "ncm": ("ncm.txt", ["ncm_human_1.txt", "ncm_human_2.txt"], "what is two plus two ?"),
    "dbdc": ("dbdc.txt", ["dbdc_human_1.txt", "dbdc_human_2.txt"], "What 's your favorite hobby ?"),
    "os": ("os.txt", ["os_gold.txt"], "Unusual ?"),
    "twitter": ("twitter.txt", ["twitter_gold.txt"], "when you find so you decide to stay in her class 😂😉"),
}


def raw_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.removesuffix("\n").split("\n")


@pytest.mark.parametrize("name", sorted(REAL_SETS))
def test_real_chateval_set_imports_with_200_prompts(run_cli, shared_data, name):
    prompts_file, reference_files, first = REAL_SETS[name]
    prompts = shared_data / "prompts" / prompts_file
    references = [shared_data / "references" / f for f in reference_files]
    args = [arg for path in references for arg in ("--references", path)]
    result = run_cli("datasets", "import-text", "--name", name, "--prompts", prompts, *args)
    assert result.exit_code == 0, result.stderr
    data = load_dataset(name)
    assert len(data) == 200
    assert data.prompt_ids == tuple(str(i) for i in range(200))
    assert data.prompts[0].context[0].content == first
    assert [p.context[0].content for p in data.prompts] == raw_lines(prompts)
    for column, path in enumerate(references):
        assert [refs[column] for refs in data.references] == raw_lines(path)


def test_real_dbdc_reference_keeps_its_trailing_space(run_cli, shared_data, tmp_path):
    out = tmp_path / "dbdc"
    result = run_cli(
        "datasets", "import-text", "--name", "dbdc", "--out", out,
        "--prompts", shared_data / "prompts" / "dbdc.txt",
        "--references", shared_data / "references" / "dbdc_human_1.txt",
        "--references", shared_data / "references" / "dbdc_human_2.txt",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = load_dataset(out)
    assert data.references[7][0] == "uh ?? "  # line 8 of dbdc_human_1.txt
    assert data.references[96][0].endswith("hilarious ")


def test_ncm_fixture_matches_the_shared_files(ncm_dataset, shared_data):
    assert len(ncm_dataset) == 200
    assert ncm_dataset.prompts[0].context[0].content == "what is two plus two ?"
    assert len(ncm_dataset.references[0]) == 2
    assert ncm_dataset.references[0][0] == raw_lines(shared_data / "references" / "ncm_human_1.txt")[0]
    assert ncm_dataset.references[-1][1] == raw_lines(shared_data / "references" / "ncm_human_2.txt")[-1]


def test_import_text_refuses_an_empty_turn_after_splitting(run_cli, tmp_path, chateval_home):
    prompts = tmp_path / "p.txt"
    prompts.write_text("hi __eou__ hello\nhello __eou__ \n", encoding="utf-8")
    references = tmp_path / "r.txt"
    references.write_text("a\nb\n", encoding="utf-8")
    result = run_cli(
        "datasets",
        "import-text",
        "--name",
        "turns",
        "--prompts",
        prompts,
        "--references",
        references,
        "--turn-separator",
        "__eou__",
    )
    assert result.exit_code == 3
    assert "line 2: empty turn in prompt" in result.stderr
    assert not (chateval_home / "datasets" / "turns").exists()
