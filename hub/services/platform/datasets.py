"""The datasets the hub serves: looked up by name among the installed ones, never by a path."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from evaluation.dataset import Dataset, installed_dataset_dirs, load_dataset_dir
from evaluation.errors import EvaluationError
from hub.errors import HubError, NotFound

log = logging.getLogger(__name__)


def _stamp(folder: Path) -> tuple:
    files = (folder / "manifest.json", folder / "prompts.jsonl")
    return tuple((f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists())


@lru_cache(maxsize=16)
def _load_unchanged(folder: Path, stamp: tuple) -> Dataset:
    """Loading re-hashes and re-parses every prompt (about 2 s for 100,000), so a loaded dataset is kept for
    as long as its files are unchanged; the stamp in the key makes an edited dataset load afresh."""
    return load_dataset_dir(folder)


def installed_dataset(name: str) -> Dataset:
    """An installed dataset by name only (never a path), or 404."""
    folder = installed_dataset_dirs().get(name)
    if folder is None:
        raise NotFound(f"no dataset {name!r}")
    try:
        return _load_unchanged(folder, _stamp(folder))
    except EvaluationError as exc:  # the message may quote server paths: log it, tell the user less
        log.error("installed dataset %s does not load: %s", name, exc.describe())
        raise HubError(f"dataset {name!r} is damaged on this server; an admin has to repair it") from exc
