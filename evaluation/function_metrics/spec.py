"""What a function metric is: its function, scope (turn or conversation), roles, value names, gates and card."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal

from evaluation.errors import ConfigurationError, EvaluationError

Over = Literal["turn", "conversation"]
ROLES = ("system", "user", "assistant", "tool")
DEFAULT_ROLES = ("user", "assistant")
NAME_PATTERN = r"[a-z][a-z0-9_.-]*"
KEY_PATTERN = r"[a-z][a-z0-9_]*"
MAX_NAME_CHARS = 64
MAX_CARD_CHARS = 2_000
TURN_ARGUMENTS = ("role", "index", "previous", "conversation_id")
CONVERSATION_ARGUMENTS = ("conversation_id", "system")

Values = dict[str, float]
"""The numbers one metric gave one item, by value name (`length.words`); absent where it gave None."""


@dataclass(frozen=True)
class Dependency:
    """Run only where the value `metric` (a value name such as `is-question` or `length.words`) of the same
    turn, or of the turn's conversation, lies in [min, max]; an item without that value is skipped too."""

    metric: str
    min: float = -math.inf
    max: float = math.inf

    def admits(self, value: float | None) -> bool:
        return value is not None and self.min <= value <= self.max

    def describe(self) -> str:
        low = "" if self.min == -math.inf else f"{self.min:g} <= "
        high = "" if self.max == math.inf else f" <= {self.max:g}"
        return f"{low}{self.metric}{high}" if (low or high) else f"{self.metric} present"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"metric": self.metric}
        if self.min != -math.inf:
            data["min"] = self.min
        if self.max != math.inf:
            data["max"] = self.max
        return data


def parse_dependencies(value: object, *, owner: str) -> tuple[Dependency, ...]:
    """`{"metric": NAME, "min": X, "max": Y}` (min and max optional), a list of those, or None."""
    if value is None:
        return ()
    items = [value] if isinstance(value, Mapping) else value
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise ConfigurationError(f"metric {owner!r}: depends_on must be a mapping or a list of mappings")
    result = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ConfigurationError(f"metric {owner!r}: each depends_on entry must be a mapping")
        unknown = sorted(set(item) - {"metric", "min", "max"})
        if unknown:
            raise ConfigurationError(f"metric {owner!r}: depends_on has unknown key(s) {', '.join(unknown)}")
        name = item.get("metric")
        if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name) or len(name) > 2 * MAX_NAME_CHARS:
            raise ConfigurationError(f"metric {owner!r}: depends_on needs 'metric', a metric or value name")
        low, high = _bound(item.get("min"), -math.inf, owner), _bound(item.get("max"), math.inf, owner)
        if low > high:
            raise ConfigurationError(f"metric {owner!r}: depends_on {name!r} has min {low:g} above max {high:g}")
        result.append(Dependency(name, low, high))
    return tuple(result)


def _bound(value: object, default: float, owner: str) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(float(value)):
        raise ConfigurationError(f"metric {owner!r}: depends_on min/max must be numbers, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class FunctionMetricCard:
    """For people: what the metric measures and, as plainly, what it does not."""

    measures: str
    does_not_measure: str
    higher_is_better: bool | None = None
    citation: str = ""

    def description(self) -> str:
        return f"{self.measures} Does not measure: {self.does_not_measure}"


@dataclass(frozen=True)
class FunctionMetricSpec:
    """One registered function metric. `keys` names the entries of a dict it returns (values `name.key`);
    empty when it returns one number (value `name`)."""

    name: str
    version: str
    over: Over
    roles: tuple[str, ...]
    keys: tuple[str, ...]
    depends_on: tuple[Dependency, ...]
    card: FunctionMetricCard
    function: Callable[..., Any]
    module: str
    accepts: frozenset[str] = frozenset()  # the context keywords the function takes (all with **kwargs)

    @property
    def value_names(self) -> tuple[str, ...]:
        return tuple(f"{self.name}.{key}" for key in self.keys) if self.keys else (self.name,)

    def signature(self) -> str:
        parts = [self.name, f"v{self.version}", f"over={self.over}"]
        if self.over == "turn":
            parts.append(f"roles={','.join(self.roles)}")
        parts += [f"when={dep.describe()}" for dep in self.depends_on]
        return "|".join([*parts, f"module={self.module}"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.name,
            "version": self.version,
            "over": self.over,
            "roles": list(self.roles) if self.over == "turn" else None,
            "values": list(self.value_names),
            "depends_on": [dep.to_dict() for dep in self.depends_on],
            "signature": self.signature(),
            "measures": self.card.measures,
            "does_not_measure": self.card.does_not_measure,
            "higher_is_better": self.card.higher_is_better,
        }

    def call(self, first: Any, context: Mapping[str, Callable[[], Any]]) -> Any:
        """Call the function with the text (or messages) and the context keywords it accepts; each keyword's
        value is made (by calling its maker) only when the function takes it."""
        return self.function(first, **{key: make() for key, make in context.items() if key in self.accepts})

    def values_of(self, output: Any, *, where: str) -> Values:
        """Check what the function returned: a number (bools count as 0/1), None, or a dict over `keys`."""
        if isinstance(output, Mapping):
            if not self.keys:
                raise EvaluationError(f"metric {self.name!r} returned a dict on {where}; declare its keys=(...)")
            unknown = sorted(str(k) for k in output if k not in self.keys)
            if unknown:
                raise EvaluationError(
                    f"metric {self.name!r} returned undeclared key(s) {', '.join(unknown)} on {where} "
                    f"(declared: {', '.join(self.keys)})"
                )
            values = {f"{self.name}.{key}": _number(self, output[key], where) for key in self.keys if key in output}
        elif self.keys:
            if output is not None:
                raise EvaluationError(
                    f"metric {self.name!r} must return a dict with keys {', '.join(self.keys)} on {where}, "
                    f"got {type(output).__name__}"
                )
            values = {}
        else:
            values = {self.name: _number(self, output, where)}
        return {name: value for name, value in values.items() if value is not None}


def _number(spec: FunctionMetricSpec, value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Real):
        raise EvaluationError(f"metric {spec.name!r} returned {value!r} on {where}; expected a number")
    number = float(value)
    if not math.isfinite(number):
        raise EvaluationError(f"metric {spec.name!r} returned a non-finite value {value!r} on {where}")
    return number


def check_parameters(function: Callable[..., Any], *, name: str, over: Over) -> frozenset[str]:
    """The function takes the text (or the messages) first; any other parameter must be a known keyword.
    Returns the context keywords it accepts."""
    params = list(inspect.signature(function).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        first = "text" if over == "turn" else "messages"
        raise ConfigurationError(f"metric {name!r}: the function must take the {first} as its first argument")
    known = TURN_ARGUMENTS if over == "turn" else CONVERSATION_ARGUMENTS
    for param in positional[1:] + [p for p in params if p.kind is p.KEYWORD_ONLY]:
        if param.name not in known and param.default is inspect.Parameter.empty:
            raise ConfigurationError(
                f"metric {name!r}: parameter {param.name!r} is not one a {over} metric is given "
                f"(known: {', '.join(known)})"
            )
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return frozenset(known)
    return frozenset(p.name for p in positional[1:] + params if p.name in known and p.kind is not p.POSITIONAL_ONLY)
