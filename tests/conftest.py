"""Shared fixtures: the real ChatEval data in ../shared (skipped visibly when absent), an isolated
CHATEVAL_HOME per test, and a way to run the CLI in-process."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluation.settings import get_settings

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data" / "chateval"


@pytest.fixture(autouse=True)
def chateval_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own empty toolkit home, so no test sees another's datasets or caches."""
    home = tmp_path_factory.mktemp("chateval-home")
    monkeypatch.setenv("CHATEVAL_HOME", str(home))
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data/chateval; CI sets HUB_REQUIRE_SHARED_DATA=1 so that its absence fails instead of skips."""
    if not (SHARED_DATA / "votes.csv").is_file():
        if os.environ.get("HUB_REQUIRE_SHARED_DATA") == "1":
            pytest.fail(f"HUB_REQUIRE_SHARED_DATA=1 but the shared ChatEval data is missing at {SHARED_DATA}")
        pytest.skip(f"shared ChatEval data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def ncm_dataset(shared_data: Path, tmp_path: Path):
    """The real NCM set (200 prompts, two human references) imported through `import_text`."""
    from evaluation.text_import import import_text

    return import_text(
        out=tmp_path / "ncm",
        prompts_path=shared_data / "prompts" / "ncm.txt",
        reference_paths=[
            shared_data / "references" / "ncm_human_1.txt",
            shared_data / "references" / "ncm_human_2.txt",
        ],
        manifest_fields=dict(name="ncm", version="test", description="", source="", license="", citation=""),
    )


@pytest.fixture
def hub_open():
    from evaluation.dataset import load_dataset

    return load_dataset("hub-open-v1")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys):
    """Run `chateval ARGS...` in-process through the real entry point; returns exit code and output."""
    from hub.cli import main  # the full `chateval`: toolkit commands plus the hub's

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
