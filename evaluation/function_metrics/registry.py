"""`@function_metric`: registers a plain function over a turn (or response) or a whole conversation.

Each value it gives (`length.words`, `length.chars`, or `is-question`) also becomes a metric family of the one
metric registry (`evaluation.metrics.registry`), so function metrics are loaded the same ways as every metric
(`--plugin FILE`, the `chateval.metrics` entry point), listed by `chateval metrics list`, and per-turn ones score
response files with `chateval evaluate --dataset ... --responses ...` like any other metric.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evaluation.errors import ConfigurationError
from evaluation.function_metrics.graph import plan, refuse_cycles
from evaluation.function_metrics.runner import score_responses
from evaluation.function_metrics.spec import (
    DEFAULT_ROLES,
    KEY_PATTERN,
    MAX_CARD_CHARS,
    MAX_NAME_CHARS,
    NAME_PATTERN,
    ROLES,
    FunctionMetricCard,
    FunctionMetricSpec,
    Over,
    check_parameters,
    parse_dependencies,
)
from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress
from evaluation.metrics.registry import families, register

_SPECS: dict[str, FunctionMetricSpec] = {}


def function_metric(
    name: str,
    *,
    version: str,
    measures: str,
    does_not_measure: str,
    over: Over = "turn",
    roles: Sequence[str] | None = None,
    keys: Sequence[str] = (),
    depends_on: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    higher_is_better: bool | None = None,
    citation: str = "",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `function` as a metric over each turn (`over="turn"`, the default; a response of a response
    file is an assistant turn) or over each whole conversation (`over="conversation"`).

    The function takes the turn's text (or the conversation's messages, a list of {"role", "content"}) first;
    a turn metric may also take `role`, `index`, `previous` (the earlier messages) and `conversation_id`, a
    conversation metric `conversation_id` and `system`. It returns a number (True/False count as 1/0), None
    where it does not apply, or a dict over the declared `keys` (values named `name.key`).
    roles: the turn roles it runs on (default user and assistant); depends_on: gates such as
    `{"metric": "is-question", "min": 1}` (run only where that value of the same turn, or of the turn's
    conversation, is within [min, max]). Bump `version` whenever its output could change.
    """
    if not re.fullmatch(NAME_PATTERN, name) or len(name) > MAX_NAME_CHARS or name.endswith("."):
        raise ConfigurationError(f"metric name {name!r} must be lower-case letters, digits, '.', '_' or '-'")
    if over not in ("turn", "conversation"):
        raise ConfigurationError(f"metric {name!r}: over must be 'turn' or 'conversation', not {over!r}")
    chosen = tuple(roles) if roles is not None else DEFAULT_ROLES
    if over == "turn" and (not chosen or any(role not in ROLES for role in chosen)):
        raise ConfigurationError(f"metric {name!r}: roles must be some of {', '.join(ROLES)}, got {list(chosen)}")
    if over == "conversation" and roles is not None:
        raise ConfigurationError(f"metric {name!r}: roles apply to turn metrics only")
    bad_keys = [k for k in keys if not isinstance(k, str) or not re.fullmatch(KEY_PATTERN, k)]
    if bad_keys or len(set(keys)) != len(keys):
        raise ConfigurationError(f"metric {name!r}: keys must be distinct lower-case identifiers, got {list(keys)}")
    for label, text in (("measures", measures), ("does_not_measure", does_not_measure)):
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_CARD_CHARS:
            raise ConfigurationError(f"metric {name!r}: the card's {label} must be a text of 1-{MAX_CARD_CHARS} chars")
    card = FunctionMetricCard(measures.strip(), does_not_measure.strip(), higher_is_better, citation)
    dependencies = parse_dependencies(depends_on, owner=name)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        accepts = check_parameters(function, name=name, over=over)
        existing = _SPECS.get(name)
        if existing is not None and existing.module != function.__module__:
            raise ConfigurationError(f"metric {name!r} is already registered by {existing.module}")
        spec = FunctionMetricSpec(
            name=name,
            version=str(version),
            over=over,
            roles=chosen if over == "turn" else (),
            keys=tuple(keys),
            depends_on=dependencies,
            card=card,
            function=function,
            module=function.__module__,
            accepts=accepts,
        )
        others = [s for s in _SPECS.values() if s.name != name]
        refuse_cycles([*others, spec])  # a cycle among registered metrics is refused as it closes
        for value in spec.value_names:
            register(_family(spec, value))
        _SPECS[name] = spec
        return function

    return decorate


def function_metrics() -> dict[str, FunctionMetricSpec]:
    """Every registered function metric (built-ins, entry points and loaded plugin files), by name."""
    families()  # loads the built-ins and entry points
    return dict(sorted(_SPECS.items()))


def plan_for(names: Sequence[str] | None, extra: Sequence[Any] = ()) -> list[Any]:
    """The function metrics named (metric or value names; all when None) plus `extra` nodes (rubrics),
    with everything they depend on, in dependency order. Unknown names and dependencies and cycles are refused."""
    specs = function_metrics()
    by_value = {value: spec for spec in specs.values() for value in (spec.name, *spec.value_names)}
    if names is None:
        requested: list[Any] = list(specs.values())
    else:
        unknown = [n for n in names if n not in by_value]
        if unknown:
            shown = ", ".join(sorted(specs))
            raise ConfigurationError(f"unknown function metric(s) {', '.join(unknown)} (available: {shown})")
        requested = list({by_value[n].name: by_value[n] for n in names}.values())
    return plan([*requested, *extra], list(specs.values()))


@dataclasses.dataclass(frozen=True)
class _NoConfig:
    pass


class FunctionValueMetric(Metric):
    """One value of a function metric as a metric family: per-turn values score each response of a file
    (as an assistant turn without context); gated responses get None. Conversation values need a log file."""

    spec: FunctionMetricSpec
    value: str

    def signature_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"over": self.spec.over}
        if self.spec.depends_on:
            fields["when"] = ";".join(dep.describe() for dep in self.spec.depends_on)
        return fields

    def library_versions(self) -> dict[str, str]:
        return {"module": self.spec.module}

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        scored = score_responses(plan_for([self.spec.name]), list(inputs.responses))
        per_prompt = [item.values.get(self.value) for item in scored]
        present = [v for v in per_prompt if v is not None]
        corpus = sum(present) / len(present) if present else math.nan
        if progress:
            progress(len(per_prompt), len(per_prompt))
        return self.result(corpus, per_prompt, scored=len(present))


def _family(spec: FunctionMetricSpec, value: str) -> type[Metric]:
    on_responses = spec.over == "turn" and "assistant" in spec.roles
    card = MetricCard(
        description=spec.card.description(),
        higher_is_better=spec.card.higher_is_better,
        citation=spec.card.citation,
        needs=("responses",) if on_responses else ("conversations",),
    )
    attrs = {
        "family": value,
        "version": spec.version,
        "card": card,
        "Config": _NoConfig,
        "spec": spec,
        "value": value,
        "__module__": spec.module,
    }
    return type(f"FunctionValueMetric[{value}]", (FunctionValueMetric,), attrs)
