"""Function-metric tests register plugin metrics; each test's registrations are undone afterwards, so no
other test sees them (a plugin metric would otherwise run by default in every later evaluation)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.function_metrics import registry as function_registry
from evaluation.metrics import registry


@pytest.fixture(autouse=True)
def restore_registries():
    registry.families()  # built-ins and entry points loaded before the snapshot
    families, specs = dict(registry._FAMILIES), dict(function_registry._SPECS)
    yield
    registry._FAMILIES.clear()
    registry._FAMILIES.update(families)
    function_registry._SPECS.clear()
    function_registry._SPECS.update(specs)


@pytest.fixture
def write_log(tmp_path: Path):
    """write_log(records or raw lines) -> path of a conversation log."""

    def write(lines: list, name: str = "logs.jsonl") -> Path:
        path = tmp_path / name
        text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def plugin(tmp_path: Path):
    """plugin(source) -> path of a plugin file whose source starts with the function_metric import."""
    count = 0

    def write(source: str) -> Path:
        nonlocal count
        count += 1
        path = tmp_path / f"fm_plugin_{count}.py"
        path.write_text("from evaluation.function_metrics import function_metric\n\n" + source, encoding="utf-8")
        return path

    return write
