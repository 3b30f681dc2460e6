"""Dependencies between metrics: which node gives each value, and an order where every node follows its gates.

A node is a function metric (`FunctionMetricSpec`) or anything shaped like one (a rubric run over turns):
`name`, `over`, `roles`, `value_names` and `depends_on`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from evaluation.errors import ConfigurationError, NotFoundError
from evaluation.function_metrics.spec import Dependency


class Node(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def over(self) -> str: ...
    @property
    def roles(self) -> tuple[str, ...]: ...
    @property
    def depends_on(self) -> tuple[Dependency, ...]: ...
    @property
    def value_names(self) -> tuple[str, ...]: ...


def producers(nodes: Iterable[Node]) -> dict[str, Node]:
    """Each value name, and each node's own name, mapped to the node computing it."""
    result: dict[str, Node] = {}
    for node in nodes:
        for value in (node.name, *node.value_names):
            result[value] = node
    return result


def resolve(dependency: Dependency, known: Mapping[str, Node], *, owner: str) -> Node:
    """The node giving a dependency's value; a name of a metric with several values is refused as ambiguous."""
    node = known.get(dependency.metric)
    if node is None:
        raise NotFoundError(f"metric {owner!r} depends on {dependency.metric!r}, which is not a registered metric")
    if dependency.metric not in node.value_names:
        names = ", ".join(node.value_names)
        raise ConfigurationError(
            f"metric {owner!r} depends on {dependency.metric!r}, which gives several values: name one of {names}"
        )
    return node


def find_cycle(nodes: Iterable[Node]) -> list[str] | None:
    """Names along one dependency cycle among `nodes` (first name repeated at the end), or None.
    Dependencies on values no node here gives are ignored (they may be registered later)."""
    known = producers(nodes)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: Node) -> list[str] | None:
        state[node.name] = 1
        path.append(node.name)
        for dep in node.depends_on:
            target = known.get(dep.metric)
            if target is None:
                continue
            if state.get(target.name) == 1:
                return [*path[path.index(target.name) :], target.name]
            if target.name not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node.name] = 2
        return None

    for node in {n.name: n for n in known.values()}.values():
        if node.name not in state:
            found = visit(node)
            if found:
                return found
    return None


def refuse_cycles(nodes: Iterable[Node]) -> None:
    cycle = find_cycle(nodes)
    if cycle:
        raise ConfigurationError(f"metric dependency cycle: {' -> '.join(cycle)}")


def plan(requested: Sequence[Node], available: Sequence[Node]) -> list[Node]:
    """`requested` plus every node they depend on (from `available`), each after all it depends on.

    Refused: a dependency no node gives, a cycle (named), a conversation metric gated by a turn value, and a
    turn metric gated by a turn value not computed for all of its roles."""
    known = producers([*available, *requested])
    refuse_cycles(known.values())
    ordered: list[Node] = []
    placed: set[str] = set()

    def place(node: Node) -> None:
        if node.name in placed:
            return
        for dep in node.depends_on:
            target = resolve(dep, known, owner=node.name)
            check_levels(node, target, dep)
            place(target)
        placed.add(node.name)
        ordered.append(node)

    for node in requested:
        place(node)
    return ordered


def check_levels(node: Node, target: Node, dep: Dependency) -> None:
    if node.over == "conversation" and target.over == "turn":
        raise ConfigurationError(
            f"metric {node.name!r} scores whole conversations but depends on {dep.metric!r}, a per-turn value"
        )
    if node.over == "turn" and target.over == "turn":
        missing = [role for role in node.roles if role not in target.roles]
        if missing:
            raise ConfigurationError(
                f"metric {node.name!r} runs on {', '.join(node.roles)} turns but depends on {dep.metric!r}, "
                f"which is not computed on {', '.join(missing)} turns"
            )
