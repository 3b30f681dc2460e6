"""Metric registry: built-ins, plain-function plugins (decorator or `chateval.metrics` entry point) by name."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import importlib.util
import inspect
import math
import re
import sys
from collections.abc import Callable
from numbers import Real
from pathlib import Path
from typing import Any

from evaluation.errors import ConfigurationError, EvaluationError, NotFoundError
from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress

ENTRY_POINT_GROUP = "chateval.metrics"
_FAMILIES: dict[str, type[Metric]] = {}
_loaded = False


def register(cls: type[Metric]) -> type[Metric]:
    """Class decorator adding a metric family; a second family with the same name is refused."""
    existing = _FAMILIES.get(cls.family)
    # The same module registering again (a plugin file loaded twice) replaces its earlier definition.
    if existing is not None and existing is not cls and existing.__module__ != cls.__module__:
        raise ConfigurationError(f"metric {cls.family!r} is already registered by {existing.__module__}")
    _FAMILIES[cls.family] = cls
    return cls


@dataclasses.dataclass(frozen=True)
class _NoConfig:
    pass


def metric(
    name: str,
    *,
    version: str,
    description: str,
    higher_is_better: bool | None = True,
    citation: str = "",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a plain function as a metric.

    The function takes keyword arguments among `responses`, `references`, `prompt_ids`, `loglik` (or
    `**kwargs`) and returns either one score per prompt (the corpus score is then their mean) or a pair
    `(corpus_score, per_prompt_scores)`. Bump `version` whenever its output could change.
    """
    if not re.fullmatch(r"[a-z][a-z0-9_.-]*", name):
        raise ConfigurationError(f"metric name {name!r} must be lower-case letters, digits, '.', '_' or '-'")

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        card = MetricCard(description=description, higher_is_better=higher_is_better, citation=citation)
        attrs = {
            "family": name,
            "version": version,
            "card": card,
            "Config": _NoConfig,
            "function": staticmethod(function),
            "__module__": function.__module__,
        }
        register(type(f"FunctionMetric[{name}]", (FunctionMetric,), attrs))
        return function

    return decorate


class FunctionMetric(Metric):
    """Adapter that runs a plugin function and checks what it returns."""

    function: Callable[..., Any]

    def library_versions(self) -> dict[str, str]:
        return {"module": self.function.__module__}

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        available = {
            "responses": list(inputs.responses),
            "references": [list(refs) for refs in inputs.references],
            "prompt_ids": list(inputs.prompt_ids),
            "loglik": inputs.loglik,
        }
        params = inspect.signature(self.function).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        kwargs = available if takes_any else {k: v for k, v in available.items() if k in params}
        output = self.function(**kwargs)
        corpus, per_prompt = _unpack(self.name, output, expected=len(inputs.responses))
        return self.result(corpus, per_prompt)


def _unpack(name: str, output: Any, *, expected: int) -> tuple[float, list[float | None]]:
    """Accept per-prompt scores (any sequence or 1-d array) or a pair (corpus score, per-prompt scores)."""
    corpus = None
    if isinstance(output, tuple) and len(output) == 2 and _is_scores(output[1]):
        corpus, output = output
    if not _is_scores(output):
        raise EvaluationError(f"metric {name!r} must return per-prompt scores, got {type(output).__name__}")
    per_prompt = list(output)
    if len(per_prompt) != expected:
        raise EvaluationError(f"metric {name!r} returned {len(per_prompt)} scores for {expected} prompts")
    values: list[float | None] = []
    for i, value in enumerate(per_prompt):
        if value is not None:
            if isinstance(value, bool | str) or not isinstance(value, Real):
                raise EvaluationError(f"metric {name!r} returned {value!r} for prompt {i}; expected a number")
            if not math.isfinite(float(value)):
                raise EvaluationError(f"metric {name!r} returned a non-finite score {value!r} for prompt {i}")
        values.append(None if value is None else float(value))
    if corpus is None:
        present = [v for v in values if v is not None]
        corpus = sum(present) / len(present) if present else math.nan
    return float(corpus), values


def _is_scores(value: Any) -> bool:
    return not isinstance(value, str | bytes | dict) and hasattr(value, "__len__") and hasattr(value, "__iter__")


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    importlib.import_module("evaluation.metrics.builtin")
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry_point.load()  # importing the module runs its @metric / @register decorators
        except Exception as exc:
            # Not marked loaded: every later call reports the broken plugin again instead of hiding it.
            raise ConfigurationError(f"could not load metric plugin {entry_point.value!r}: {exc}") from exc
    _loaded = True


def load_plugin_file(path: str | Path) -> None:
    """Import a Python file so that the metrics it declares with @metric get registered."""
    path = Path(path)
    if not path.is_file():
        raise NotFoundError("metric plugin file not found", path=path)
    module_name = f"chateval_plugin_{re.sub(r'[^0-9a-zA-Z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError("not an importable Python file", path=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except EvaluationError:
        raise
    except Exception as exc:
        raise ConfigurationError(f"error while importing metric plugin: {exc!r}", path=path) from exc


def families() -> dict[str, type[Metric]]:
    _ensure_loaded()
    return dict(sorted(_FAMILIES.items()))


def _split_spec(spec: str) -> tuple[type[Metric], dict[str, Any]]:
    known = families()
    if spec in known and known[spec].parameter is None:
        return known[spec], {}
    match = re.fullmatch(r"(.+)-(\d+)", spec)
    if match and match.group(1) in known and known[match.group(1)].parameter is not None:
        cls = known[match.group(1)]
        return cls, {cls.parameter: int(match.group(2))}  # type: ignore[dict-item]
    names = ", ".join(f"{name}-N" if cls.parameter else name for name, cls in known.items())
    raise NotFoundError(f"unknown metric {spec!r} (available: {names})")


def create(spec: str, overrides: dict[str, dict[str, Any]] | None = None) -> Metric:
    """Build a metric from a name like `distinct-2` and per-family config overrides."""
    cls, values = _split_spec(spec)
    values = {**(overrides or {}).get(cls.family, {}), **values}
    field_names = {f.name for f in dataclasses.fields(cls.Config)}
    unknown = sorted(set(values) - field_names)
    if unknown:
        raise ConfigurationError(f"metric {cls.family!r} has no option(s) {', '.join(unknown)}")
    try:
        config = cls.Config(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"invalid options for metric {spec!r}: {exc}") from exc
    return cls(config)
