"""A study's annotation schema: read from YAML or JSON with every value's line kept, validated, normalised, written
back out (YAML or JSON, re-uploadable as is), and the check of a participant's answers against it.

Normalised form: {"questions": [{"id", "kind", "question", "labels", "explanation", "applies_to"}],
"edit_reason_required": bool}. Kinds: binary (two labels, default No/Yes; value true/false), likert (2 to 11 custom
labels, lowest first; value 1..n), choice (2+ options; value one option), multi (2+ options; value a list of distinct
options), text (no labels; value non-empty text).
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.nodes import Node

from evaluation.errors import InvalidInputError
from evaluation.rubrics.yaml_nodes import NodeReader
from hub.errors import UnprocessableInput

KINDS = ("binary", "likert", "choice", "multi", "text")
EXPLANATION_MODES = ("none", "optional", "required")
APPLIES_TO = ("user", "system", "both")
FORMATS = ("yaml", "json")
MAX_SCHEMA_CHARS = 64 * 1024
MAX_QUESTIONS = 50
MAX_QUESTION_CHARS = 1_000
MAX_LABELS = {"likert": 11, "choice": 30, "multi": 30, "binary": 2}
MAX_LABEL_CHARS = 200
MAX_ID_CHARS = 60
MAX_ANSWER_CHARS = 5_000
MAX_NESTING = 20
TOP_KEYS = ("questions", "edit_reason_required")
QUESTION_KEYS = ("id", "kind", "question", "labels", "explanation", "applies_to")


class SchemaError(InvalidInputError):
    """The schema file is malformed; the message names the line."""


def _compose(text: str, name: str) -> Node | None:
    """One YAML document as nodes (JSON is read the same way, so its lines are kept); no anchors or aliases."""
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1
                raise SchemaError("anchors and aliases (& and *) are not allowed in a schema", path=name, line=line)
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise SchemaError(f"character {exc.character!r} is not allowed in a schema", path=name, line=line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        raise SchemaError(f"not valid YAML: {problem}", path=name, line=mark.line + 1 if mark else None) from None


def parse_schema(text: str, source_format: str = "yaml", *, name: str = "the schema") -> dict[str, Any]:
    """The validated, normalised schema of `text`; SchemaError naming the line of the first problem."""
    if source_format not in FORMATS:
        raise SchemaError(f"format must be one of {', '.join(FORMATS)}", path=name)
    if len(text) > MAX_SCHEMA_CHARS:
        raise SchemaError(f"is {len(text):,} characters long; the limit is {MAX_SCHEMA_CHARS:,}", path=name)
    _check_nesting(text, name)
    if source_format == "json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"not valid JSON: {exc.msg}", path=name, line=exc.lineno) from None
    node = _compose(text, name)
    if node is None:
        raise SchemaError("is empty; it needs a list of questions", path=name, line=1)
    return _Validator(name).schema(node)


def _check_nesting(text: str, name: str) -> None:
    """Refuse brackets nested deeper than any schema needs (the parsers recurse: a deep nest would exhaust the
    stack), naming the line where the limit is passed."""
    depth = 0
    for index, char in enumerate(text):
        if char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, index) + 1
                raise SchemaError(f"brackets nested deeper than {MAX_NESTING} levels", path=name, line=line)
        elif char in "]}":
            depth = max(0, depth - 1)


def parse_schema_object(data: object, *, name: str = "the schema") -> dict[str, Any]:
    """A schema sent as a JSON object in an API body: checked as its indented JSON text (lines of that text)."""
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise SchemaError("must be a JSON object", path=name) from None
    return parse_schema(text, "json", name=name)


def checked(text: str, source_format: str, *, field: str) -> dict[str, Any]:
    """parse_schema as the hub's 422, naming `field` and, in the message, the line."""
    try:
        return parse_schema(text, source_format, name="the schema")
    except InvalidInputError as exc:
        raise UnprocessableInput(exc.describe(), field=field) from None


def checked_object(data: object, *, field: str = "schema") -> dict[str, Any]:
    try:
        return parse_schema_object(data)
    except InvalidInputError as exc:
        raise UnprocessableInput(exc.describe(), field=field) from None


class _Validator:
    def __init__(self, name: str):
        self.r = NodeReader(name)

    def fail(self, message: str, node: Node | None) -> SchemaError:
        error = self.r.fail(message, node)
        return SchemaError(error.message, path=error.path, line=error.line)

    def schema(self, node: Node) -> dict[str, Any]:
        try:
            top = self.r.mapping(node, "the schema", allowed=TOP_KEYS, required=("questions",))
            items = self.r.sequence(top["questions"], "questions", min_items=1, max_items=MAX_QUESTIONS)
            questions: list[dict[str, Any]] = []
            seen: dict[str, int] = {}
            for number, item in enumerate(items, start=1):
                question = self.question(item, number)
                if question["id"] in seen:
                    first = seen[question["id"]]
                    raise self.fail(f"question id {question['id']!r} is used twice (first by question {first})", item)
                seen[question["id"]] = number
                questions.append(question)
            edit_reason = False
            if "edit_reason_required" in top:
                edit_reason = self.boolean(top["edit_reason_required"], "edit_reason_required")
        except SchemaError:
            raise
        except InvalidInputError as exc:  # NodeReader's RubricError: same file, same line
            raise SchemaError(exc.message, path=exc.path, line=exc.line) from None
        return {"questions": questions, "edit_reason_required": edit_reason}

    def boolean(self, node: Node, what: str) -> bool:
        value = self.r.scalar(node, what)
        if not isinstance(value, bool):
            raise self.fail(f"{what} must be true or false, found {value!r}", node)
        return value

    def choice(self, node: Node, what: str, allowed: tuple[str, ...]) -> str:
        value = self.r.text(node, what, max_chars=20, one_line=True)
        if value not in allowed:
            raise self.fail(f"{what} must be one of {', '.join(allowed)}, found {value!r}", node)
        return value

    def question(self, node: Node, number: int) -> dict[str, Any]:
        what = f"question {number}"
        fields = self.r.mapping(node, what, allowed=QUESTION_KEYS, required=("id", "kind", "question"))
        kind = self.choice(fields["kind"], f"{what}: kind", KINDS)
        labels: list[str] = []
        if "labels" in fields:
            labels = self.labels(fields["labels"], f"{what}: labels", kind)
        elif kind in ("likert", "choice", "multi"):
            raise self.fail(f"{what}: a {kind} question needs its labels (at least 2)", node)
        elif kind == "binary":
            labels = ["No", "Yes"]
        return {
            "id": self.r.identifier(fields["id"], f"{what}: id", max_chars=MAX_ID_CHARS),
            "kind": kind,
            "question": self.r.text(fields["question"], f"{what}: question", max_chars=MAX_QUESTION_CHARS),
            "labels": labels,
            "explanation": (
                self.choice(fields["explanation"], f"{what}: explanation", EXPLANATION_MODES)
                if "explanation" in fields
                else "none"
            ),
            "applies_to": (
                self.choice(fields["applies_to"], f"{what}: applies_to", APPLIES_TO)
                if "applies_to" in fields
                else "system"
            ),
        }

    def labels(self, node: Node, what: str, kind: str) -> list[str]:
        if kind == "text":
            self.r.sequence(node, what, min_items=0, max_items=0)
            return []
        low, high = (2, 2) if kind == "binary" else (2, MAX_LABELS[kind])
        nodes = self.r.sequence(node, what, min_items=0, max_items=high)
        if len(nodes) < low:
            scale = "a Likert scale" if kind == "likert" else f"a {kind} question"
            raise self.fail(f"{what}: {scale} needs at least {low} points, found {len(nodes)}", node)
        items = [self.r.text(n, f"{what}[{i}]", max_chars=MAX_LABEL_CHARS, one_line=True) for i, n in enumerate(nodes)]
        seen: set[str] = set()
        for item_node, item in zip(nodes, items, strict=True):
            if item.strip() in seen:
                raise self.fail(f"{what}: label {item!r} appears twice", item_node)
            seen.add(item.strip())
        return [item.strip() for item in items]


def to_text(schema: dict[str, Any], output_format: str) -> str:
    """The normalised schema as YAML or JSON text that parse_schema reads back to the same schema."""
    if output_format == "json":
        return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(schema, sort_keys=False, allow_unicode=True, width=1_000)


def applies(question: dict[str, Any], role: str) -> bool:
    """Whether `question` is asked of a message of `role` (user or assistant)."""
    return question["applies_to"] == "both" or question["applies_to"] == ("system" if role == "assistant" else "user")


def check_answer(
    question: dict[str, Any], value: Any, explanation: str | None, *, field: str
) -> tuple[Any, str | None]:
    """The answer's value and explanation as stored; 422 naming `field` when out of range or missing."""
    kind, labels = question["kind"], question["labels"]
    if kind == "binary":
        if not isinstance(value, bool):
            raise UnprocessableInput("a binary answer is true or false", field=f"{field}.value")
    elif kind == "likert":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= len(labels):
            raise UnprocessableInput(f"a point of the scale, 1 to {len(labels)}", field=f"{field}.value")
    elif kind == "choice":
        if not isinstance(value, str) or value not in labels:
            raise UnprocessableInput("one of the question's options", field=f"{field}.value")
    elif kind == "multi":
        if not isinstance(value, list) or not all(isinstance(v, str) and v in labels for v in value):
            raise UnprocessableInput("a list of the question's options", field=f"{field}.value")
        if len(set(value)) != len(value):
            raise UnprocessableInput("each option at most once", field=f"{field}.value")
        value = [label for label in labels if label in value]
    elif kind == "text" and (not isinstance(value, str) or not value.strip() or len(value) > MAX_ANSWER_CHARS):
        raise UnprocessableInput(f"text of 1 to {MAX_ANSWER_CHARS:,} characters", field=f"{field}.value")
    explanation = (explanation or "").strip() or None
    if question["explanation"] == "none":
        explanation = None
    elif question["explanation"] == "required" and explanation is None:
        raise UnprocessableInput("this question needs an explanation", field=f"{field}.explanation")
    if explanation is not None and len(explanation) > MAX_ANSWER_CHARS:
        raise UnprocessableInput(f"at most {MAX_ANSWER_CHARS:,} characters", field=f"{field}.explanation")
    return value, explanation
