"""Scoring conversations (each turn by role, and each whole conversation) and responses, in dependency order.

Nodes run over a chunk of conversations at a time, so results stream out and a batch node (a rubric asking a
judge) gets many items per call. A node runs on an item only where every gate admits the gating value."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from evaluation.errors import EvaluationError
from evaluation.function_metrics.conversations import Conversation, Message
from evaluation.function_metrics.graph import Node, producers
from evaluation.function_metrics.spec import FunctionMetricSpec, Values

DEFAULT_CHUNK = 64


@dataclass
class Scored:
    """One turn's or one conversation's values, the gates that kept a node from running, and extra details
    (a rubric's per-criterion grades), each by node or value name."""

    values: Values = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnItem:
    conversation: Conversation
    index: int

    @property
    def message(self) -> Message:
        return self.conversation.messages[self.index]

    @property
    def where(self) -> str:
        return f"conversation {self.conversation.id!r} (line {self.conversation.line}), turn {self.index}"


@dataclass(frozen=True)
class ConversationItem:
    conversation: Conversation

    @property
    def where(self) -> str:
        return f"conversation {self.conversation.id!r} (line {self.conversation.line})"


@dataclass
class ConversationResult:
    conversation: Conversation
    turns: dict[int, Scored]  # by turn index; only turns some node's roles include
    whole: Scored


BatchCompute = Callable[[Sequence[Any]], list[tuple[Values, Any]]]
"""A batch node's own computation: per item, its values and details (None for none)."""


def run_function(spec: FunctionMetricSpec, item: TurnItem | ConversationItem) -> Values:
    """Call a function metric on one item, naming the item if the function fails or returns a wrong type."""
    conversation = item.conversation
    try:
        if isinstance(item, TurnItem):
            context = {
                "role": lambda: item.message.role,
                "index": lambda: item.index,
                "previous": lambda: [m.to_dict() for m in conversation.messages[: item.index]],
                "conversation_id": lambda: conversation.id,
            }
            output = spec.call(item.message.content, context)
        else:
            messages = [m.to_dict() for m in conversation.messages]
            output = spec.call(
                messages, {"conversation_id": lambda: conversation.id, "system": lambda: conversation.system}
            )
    except EvaluationError:
        raise
    except Exception as exc:
        raise EvaluationError(f"metric {spec.name!r} failed on {item.where}: {exc!r}") from exc
    return spec.values_of(output, where=item.where)


def score_conversations(
    conversations: Iterable[Conversation],
    nodes: Sequence[Node],
    *,
    chunk: int = DEFAULT_CHUNK,
    on_done: Callable[[int], None] | None = None,
) -> Iterator[ConversationResult]:
    """Results in file order, one conversation at a time. `nodes` must be in dependency order (graph.plan);
    on_done(k) reports k more conversations scored."""
    levels = {value: node.over for value, node in producers(nodes).items()}
    roles = {role for node in nodes if node.over == "turn" for role in node.roles}
    iterator = iter(conversations)
    while batch := list(islice(iterator, max(1, chunk))):
        results = [
            ConversationResult(
                conversation=c,
                turns={i: Scored() for i, m in enumerate(c.messages) if m.role in roles},
                whole=Scored(),
            )
            for c in batch
        ]
        for node in nodes:
            _run_node(node, results, levels)
        if on_done is not None:
            on_done(len(batch))
        yield from results


def _run_node(node: Node, results: list[ConversationResult], levels: Mapping[str, str]) -> None:
    admitted: list[tuple[TurnItem | ConversationItem, Scored]] = []
    for result in results:
        if node.over == "conversation":
            if _admit(node, result.whole, result.whole, levels):
                admitted.append((ConversationItem(result.conversation), result.whole))
            continue
        for index, scored in result.turns.items():
            role = result.conversation.messages[index].role
            if role in node.roles and _admit(node, scored, result.whole, levels):
                admitted.append((TurnItem(result.conversation, index), scored))
    if not admitted:
        return
    batch: BatchCompute | None = getattr(node, "compute_batch", None)
    if batch is not None:
        outputs = batch([item for item, _ in admitted])
        for (_, scored), (values, details) in zip(admitted, outputs, strict=True):
            scored.values.update(values)
            if details is not None:
                scored.details[node.name] = details
        return
    assert isinstance(node, FunctionMetricSpec)
    for item, scored in admitted:
        scored.values.update(run_function(node, item))


def _admit(node: Node, scored: Scored, whole: Scored, levels: Mapping[str, str]) -> bool:
    """Whether every gate admits its value (a conversation value for a turn: the turn's conversation's)."""
    for dep in node.depends_on:
        source = whole if levels.get(dep.metric) == "conversation" else scored
        value = source.values.get(dep.metric)
        if not dep.admits(value):
            shown = "none" if value is None else f"{value:g}"
            scored.skipped[node.name] = f"{dep.metric}={shown}, not {dep.describe()}"
            return False
    return True


def score_responses(nodes: Sequence[Node], responses: Sequence[str]) -> list[Scored]:
    """Each response as the assistant turn of a one-message conversation (no context): per-turn nodes only."""
    conversations = [
        Conversation(id=str(i), system=None, messages=(Message("assistant", text),), line=i + 1)
        for i, text in enumerate(responses)
    ]
    results = score_conversations(conversations, nodes, chunk=max(1, len(conversations)))
    return [result.turns.get(0, Scored()) for result in results]


class Summary:
    """Per (system, role, value): count, mean, sample standard deviation, min and max, updated one value at a
    time (Welford), so a file of any length is summarised in bounded memory. Role None: conversation values."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str | None, str | None, str], list[float]] = {}

    def add_result(self, result: ConversationResult) -> None:
        system = result.conversation.system
        for index, scored in result.turns.items():
            role = result.conversation.messages[index].role
            for name, value in scored.values.items():
                self.add(system, role, name, value)
        for name, value in result.whole.values.items():
            self.add(system, None, name, value)

    def add(self, system: str | None, role: str | None, name: str, value: float) -> None:
        state = self.groups.setdefault((system, role, name), [0, 0.0, 0.0, math.inf, -math.inf])
        state[0] += 1
        delta = value - state[1]
        state[1] += delta / state[0]
        state[2] += delta * (value - state[1])
        state[3], state[4] = min(state[3], value), max(state[4], value)

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for (system, role, name), (n, mean, m2, low, high) in self.groups.items():
            sd = math.sqrt(m2 / (n - 1)) if n > 1 else None
            rows.append(
                {
                    "system": system,
                    "role": role,
                    "metric": name,
                    "n": int(n),
                    "mean": mean,
                    "sd": sd,
                    "min": low,
                    "max": high,
                }
            )
        return sorted(rows, key=lambda r: (r["system"] or "", r["role"] or "", r["metric"]))
