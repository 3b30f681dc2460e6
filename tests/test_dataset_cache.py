"""A validated prompts file is kept parsed, named by its sha256: a second load reads it back, a changed file never."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evaluation import dataset
from evaluation.dataset import load_dataset_dir, sha256_file

HUB_OPEN_DIR = Path(__file__).resolve().parent.parent / "datasets" / "hub-open-v1"


@pytest.fixture
def folder(tmp_path, chateval_home) -> Path:
    return Path(shutil.copytree(HUB_OPEN_DIR, tmp_path / "hub-open-v1"))


def refuse_parsing(monkeypatch) -> None:
    def parse(path):
        raise AssertionError(f"{path} parsed again")

    monkeypatch.setattr(dataset, "parse_prompts", parse)


def test_second_load_reads_the_parsed_prompts_back(folder, chateval_home, monkeypatch):
    first = load_dataset_dir(folder)
    assert list((chateval_home / "cache" / "prompts").iterdir())  # kept
    refuse_parsing(monkeypatch)
    second = load_dataset_dir(folder)
    assert second.prompts == first.prompts
    assert second.prompt_ids == first.prompt_ids and second.references == first.references
    assert second.prompts[3] == first.prompts[3]  # Prompt objects rebuilt from the columns


def test_a_changed_prompts_file_is_parsed_and_checked_again(folder, chateval_home, monkeypatch):
    load_dataset_dir(folder)
    lines = (folder / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["references"] = ["an edited reference"]
    (folder / "prompts.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n", encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["prompts_sha256"] = sha256_file(folder / "prompts.jsonl")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    reloaded = load_dataset_dir(folder)
    assert reloaded.references[0] == ("an edited reference",)
    refuse_parsing(monkeypatch)
    assert load_dataset_dir(folder).references[0] == ("an edited reference",)


def test_an_unreadable_cache_file_is_ignored(folder, chateval_home):
    first = load_dataset_dir(folder)
    for cached in (chateval_home / "cache" / "prompts").iterdir():
        cached.write_bytes(cached.read_bytes()[:100])  # truncated
    assert load_dataset_dir(folder).prompts == first.prompts


def test_the_cache_keeps_the_files_used_last(folder, chateval_home, monkeypatch):
    cache = chateval_home / "cache" / "prompts"
    cache.mkdir(parents=True)
    old = []
    for i in range(dataset.PROMPTS_CACHE_KEPT + 3):  # other datasets' (or versions') files, used long ago
        stale = cache / f"{i:064x}-old.marshal"
        stale.write_bytes(b"x")
        os.utime(stale, (1_000_000 + i, 1_000_000 + i))
        old.append(stale)
    os.utime(old[0], None)  # read again just now: among the files used last
    load_dataset_dir(folder)  # writes this dataset's file, then prunes
    kept = set(cache.glob("*.marshal"))
    assert len(kept) == dataset.PROMPTS_CACHE_KEPT
    assert old[0] in kept and old[-1] in kept and old[1] not in kept  # the least recently used go first
    refuse_parsing(monkeypatch)
    load_dataset_dir(folder)  # this dataset's own file was kept
