"""A rubric graded by a judge on conversation turns, as one node of the metric graph: it runs after, and only
where, the function metrics gating it admit the turn (e.g. "rubric only on turns that ask a question")."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.errors import ConfigurationError
from evaluation.function_metrics.runner import TurnItem
from evaluation.function_metrics.spec import Dependency, Values, parse_dependencies
from evaluation.rubrics import Rubric, grade_items, rubric_signature
from evaluation.rubrics.schema import MAX_FIELD_CHARS

TURN_FIELDS = ("context", "response")
GATE = re.compile(r"(?P<metric>[^:]+):(?P<min>[^:]*)(?::(?P<max>[^:]*))?")


def parse_gate(text: str) -> Dependency:
    """`METRIC:MIN[:MAX]`, either bound may be empty: `is-question:1`, `length.words::50`, `readability:30:70`."""
    match = GATE.fullmatch(text.strip())
    if match is None:
        raise ConfigurationError(f"--rubric-when {text!r}: expected METRIC:MIN[:MAX], e.g. is-question:1")
    bounds: dict[str, Any] = {"metric": match["metric"].strip()}
    for key in ("min", "max"):
        value = (match[key] or "").strip()
        if value:
            try:
                bounds[key] = float(value)
            except ValueError:
                raise ConfigurationError(f"--rubric-when {text!r}: {key} {value!r} is not a number") from None
            if not math.isfinite(bounds[key]):
                raise ConfigurationError(f"--rubric-when {text!r}: {key} must be finite")
    return parse_dependencies(bounds, owner="--rubric-when")[0]


def render_context(messages: Sequence[dict[str, str]]) -> str:
    """The conversation before the turn, one message per line (`user: ...`), as the shipped rubrics describe;
    the latest part is kept when it is longer than a rubric field may be."""
    text = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
    return text[-MAX_FIELD_CHARS:]


@dataclass
class RubricTurns:
    """Values `rubric-<id>.score` (the rubric's score) and `rubric-<id>.passed` (1 PASSED, 0 REDO) on each admitted
    turn of `roles`; the per-criterion grades and explanations are kept as the turn's details."""

    rubric: Rubric
    ask: Any  # an evaluation.llm.ChatClient, or a callable as grade_items takes
    judge: dict[str, Any]  # the endpoint's public settings (no key), part of the signature
    depends_on: tuple[Dependency, ...] = ()
    roles: tuple[str, ...] = ("assistant",)
    progress: Callable[[int], None] | None = None  # called with the number of judge calls just answered
    over: str = "turn"

    def __post_init__(self) -> None:
        extra = [name for name in self.rubric.fields if name not in TURN_FIELDS]
        if extra:
            raise ConfigurationError(
                f"rubric {self.rubric.id!r} shows the judge {', '.join(extra)}, which conversation turns do not "
                f"have (a turn gives {', '.join(TURN_FIELDS)})"
            )

    @property
    def name(self) -> str:
        return "rubric-" + re.sub(r"[^a-z0-9_-]+", "-", self.rubric.id.lower())

    @property
    def value_names(self) -> tuple[str, ...]:
        return (f"{self.name}.score", f"{self.name}.passed")

    def signature(self) -> str:
        gates = [f"when={dep.describe()}" for dep in self.depends_on]
        judge = f"judge={self.judge.get('model')}@{self.judge.get('base_url')}"
        return "|".join([rubric_signature(self.rubric), f"roles={','.join(self.roles)}", *gates, judge])

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.name,
            "version": self.rubric.version,
            "over": self.over,
            "roles": list(self.roles),
            "values": list(self.value_names),
            "depends_on": [dep.to_dict() for dep in self.depends_on],
            "signature": self.signature(),
            "measures": self.rubric.description or self.rubric.name,
            "does_not_measure": "Anything its criteria do not name; a judge's grade, not a person's.",
            "judge": self.judge,
        }

    def compute_batch(self, items: Sequence[TurnItem]) -> list[tuple[Values, Any]]:
        payload = [
            {
                "conversation": item.conversation.id,
                "turn": str(item.index),
                "context": render_context([m.to_dict() for m in item.conversation.messages[: item.index]]),
                "response": item.message.content,
            }
            for item in items
        ]
        answered = 0

        def report(done: int, total: int) -> None:
            nonlocal answered
            if self.progress is not None:
                self.progress(done - answered)
            answered = done

        results = grade_items(self.rubric, payload, self.ask, progress=report)
        outputs: list[tuple[Values, Any]] = []
        for result in results:
            values = {}
            if result.score is not None:
                values = {self.value_names[0]: result.score, self.value_names[1]: float(result.status == "PASSED")}
            details = {"status": result.status, "criteria": [c.to_dict() for c in result.criteria]}
            outputs.append((values, details))
        return outputs
