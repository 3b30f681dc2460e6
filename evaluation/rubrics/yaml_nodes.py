"""Reading YAML as nodes so that every value keeps its line: mappings with unknown or duplicate keys, typed scalars."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from evaluation.errors import InvalidInputError


class RubricError(InvalidInputError):
    """A rubric file is malformed; the message names the file and, where YAML tells, the line."""


def line_of(node: Node) -> int:
    return node.start_mark.line + 1


def compose(text: str, *, name: str | Path) -> Node | None:
    """Parse one YAML document into nodes, refusing anchors and aliases (no "billion laughs" expansion)."""
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise RubricError(
                    "anchors and aliases (& and *) are not allowed in a rubric",
                    path=name,
                    line=event.start_mark.line + 1,
                )
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise RubricError(f"character {exc.character!r} is not allowed in a rubric", path=name, line=line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        raise RubricError(f"not valid YAML: {problem}", path=name, line=mark.line + 1 if mark else None) from None


class NodeReader:
    """Typed access to composed nodes; every refusal is a RubricError at the offending node's line."""

    def __init__(self, name: str | Path):
        self.name = name
        self._constructor = yaml.constructor.SafeConstructor()

    def fail(self, message: str, node: Node | None) -> RubricError:
        return RubricError(message, path=self.name, line=line_of(node) if node is not None else None)

    def mapping(self, node: Node, what: str, *, allowed: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Node]:
        if not isinstance(node, MappingNode):
            raise self.fail(f"{what} must be a mapping of keys to values", node)
        result: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node, f"a key of {what}")
            if not isinstance(key, str):
                raise self.fail(f"keys of {what} must be text, found {key!r}", key_node)
            if key in result:
                raise self.fail(f"duplicate key {key!r} in {what} (first at line {line_of(result[key])})", key_node)
            if key not in allowed:
                raise self.fail(f"unknown key {key!r} in {what}; allowed keys: {', '.join(allowed)}", key_node)
            result[key] = value_node
        missing = [key for key in required if key not in result]
        if missing:
            raise self.fail(f"{what} is missing {', '.join(repr(key) for key in missing)}", node)
        return result

    def sequence(self, node: Node, what: str, *, min_items: int, max_items: int) -> list[Node]:
        if not isinstance(node, SequenceNode):
            raise self.fail(f"{what} must be a list", node)
        if len(node.value) < min_items:
            raise self.fail(f"{what} needs at least {min_items} entr{'y' if min_items == 1 else 'ies'}", node)
        if len(node.value) > max_items:
            raise self.fail(f"{what} has {len(node.value)} entries; the limit is {max_items}", node)
        return list(node.value)

    def scalar(self, node: Node, what: str) -> object:
        if not isinstance(node, ScalarNode):
            raise self.fail(f"{what} must be a single value, not a list or mapping", node)
        try:
            return self._constructor.construct_object(node)
        except yaml.constructor.ConstructorError as exc:
            raise self.fail(f"{what}: {exc.problem}", node) from None

    def text(self, node: Node, what: str, *, max_chars: int, one_line: bool = False, empty: bool = False) -> str:
        value = self.scalar(node, what)
        if isinstance(value, bool):
            raise self.fail(f"{what} was read by YAML as {str(value).lower()}: put it in quotes", node)
        if isinstance(value, int | float) and not one_line:
            raise self.fail(f"{what} must be text", node)
        if isinstance(value, int | float):
            value = str(value)
        if not isinstance(value, str):
            raise self.fail(f"{what} must be text", node)
        if not empty and not value.strip():
            raise self.fail(f"{what} must not be empty", node)
        if len(value) > max_chars:
            raise self.fail(f"{what} is {len(value):,} characters long; the limit is {max_chars:,}", node)
        allowed = "" if one_line else "\n\t"
        bad = next((ch for ch in value if ch not in allowed and unicodedata.category(ch) in ("Cc", "Cs")), None)
        if bad is not None:
            raise self.fail(f"{what} contains the control character U+{ord(bad):04X}", node)
        return value

    def identifier(self, node: Node, what: str, *, max_chars: int) -> str:
        value = self.text(node, what, max_chars=max_chars, one_line=True)
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", value):
            raise self.fail(f"{what} {value!r} must be lower-case letters, digits, '.', '_' or '-'", node)
        return value

    def number(self, node: Node, what: str, *, low: float, high: float, integer: bool = False) -> float:
        value = self.scalar(node, what)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"{what} must be a number, found {value!r}", node)
        if not math.isfinite(value) or not low <= value <= high:
            raise self.fail(f"{what} must be between {low:g} and {high:g}, found {value!r}", node)
        if integer and not float(value).is_integer():
            raise self.fail(f"{what} must be a whole number, found {value!r}", node)
        return float(value)
