"""Rubric YAML (a user's file or a shipped one) -> a validated Rubric; each problem named with its line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

from yaml.nodes import Node

from evaluation.errors import NotFoundError
from evaluation.rubrics.schema import (
    FIELD_NAMES,
    HARSHNESS_INSTRUCTIONS,
    MAX_CRITERIA,
    MAX_EXPLANATION_WORDS,
    MAX_GRADE_VALUE,
    MAX_GRADES,
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_RUBRIC_BYTES,
    MAX_TEXT_CHARS,
    MODES,
    WEIGHT_TOLERANCE,
    Criterion,
    GradeOption,
    Harshness,
    Mode,
    Rubric,
)
from evaluation.rubrics.yaml_nodes import NodeReader, RubricError, compose, line_of

SHIPPED_DIR = Path(__file__).parent / "shipped"

TOP_KEYS = (
    "id",
    "version",
    "name",
    "mode",
    "description",
    "instructions",
    "fields",
    "pass_threshold",
    "max_score",
    "harshness",
    "max_explanation_words",
    "criteria",
)
CRITERION_KEYS = ("id", "name", "definition", "weight", "points", "harshness", "grades")
GRADE_KEYS = ("label", "value", "definition")
DEFAULT_EXPLANATION_WORDS = 80


def shipped_rubrics() -> dict[str, Path]:
    """The rubrics that come with the toolkit, by file stem."""
    return {path.stem: path for path in sorted(SHIPPED_DIR.glob("*.yaml"))}


def load_rubric(source: str | Path) -> Rubric:
    """Load a rubric from a YAML file, or a shipped rubric by name (`helpfulness`, `milo-qa`)."""
    path = Path(source)
    if not path.is_file():
        shipped = shipped_rubrics()
        if str(source) not in shipped:
            names = ", ".join(shipped) or "none"
            raise NotFoundError(f"no rubric file or shipped rubric of that name (shipped: {names})", path=source)
        path = shipped[str(source)]
    size = path.stat().st_size
    if size > MAX_RUBRIC_BYTES:
        raise RubricError(f"rubric file is {size:,} bytes; the limit is {MAX_RUBRIC_BYTES:,}", path=path)
    return parse_rubric(path.read_bytes(), name=path)


def parse_rubric(data: str | bytes, *, name: str | Path = "<rubric>") -> Rubric:
    """Validate rubric YAML text; raises RubricError naming the line of the first problem."""
    if isinstance(data, bytes):
        if len(data) > MAX_RUBRIC_BYTES:
            raise RubricError(f"rubric is {len(data):,} bytes; the limit is {MAX_RUBRIC_BYTES:,}", path=name)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise RubricError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", path=name, line=line) from None
    else:
        text = data
        size = len(text.encode("utf-8"))
        if size > MAX_RUBRIC_BYTES:
            raise RubricError(f"rubric is {size:,} bytes; the limit is {MAX_RUBRIC_BYTES:,}", path=name)
    root = compose(text, name=name)
    if root is None:
        raise RubricError("rubric is empty", path=name)
    return _RubricBuilder(NodeReader(name)).build(root)


class _RubricBuilder:
    def __init__(self, reader: NodeReader):
        self.r = reader

    def build(self, root: Node) -> Rubric:
        r = self.r
        top = r.mapping(
            root, "the rubric", allowed=TOP_KEYS, required=("id", "version", "name", "mode", "fields", "criteria")
        )
        mode_value = r.text(top["mode"], "mode", max_chars=40, one_line=True)
        if mode_value not in MODES:
            raise r.fail(f"mode must be one of {', '.join(MODES)}, found {mode_value!r}", top["mode"])
        mode = cast(Mode, mode_value)
        max_score = self._max_score(top, mode, root)
        harshness = self._harshness(top.get("harshness"), "harshness", default="balanced")
        criteria = self._criteria(top["criteria"], mode, harshness)
        if "pass_threshold" not in top:
            raise r.fail("the rubric is missing 'pass_threshold' (the score below which a response is REDO)", root)
        threshold = r.number(top["pass_threshold"], "pass_threshold", low=0.0, high=max_score)
        words = DEFAULT_EXPLANATION_WORDS
        if "max_explanation_words" in top:
            words = int(
                r.number(
                    top["max_explanation_words"],
                    "max_explanation_words",
                    low=1,
                    high=MAX_EXPLANATION_WORDS,
                    integer=True,
                )
            )
        return Rubric(
            id=r.identifier(top["id"], "id", max_chars=MAX_ID_CHARS),
            version=r.text(top["version"], "version", max_chars=MAX_ID_CHARS, one_line=True),
            name=r.text(top["name"], "name", max_chars=MAX_NAME_CHARS, one_line=True),
            mode=mode,
            criteria=criteria,
            fields=self._fields(top["fields"]),
            pass_threshold=threshold,
            max_score=max_score,
            max_explanation_words=words,
            description=self._optional_text(top.get("description"), "description"),
            instructions=self._optional_text(top.get("instructions"), "instructions"),
        )

    def _max_score(self, top: dict[str, Node], mode: Mode, root: Node) -> float:
        if mode == "grading_scale":
            if "max_score" in top:
                raise self.r.fail(
                    "max_score is for point_deduction mode; grading_scale scores run 0 to 1", top["max_score"]
                )
            return 1.0
        if "max_score" not in top:
            raise self.r.fail("point_deduction mode needs max_score (M, the score with no deduction)", root)
        return self.r.number(top["max_score"], "max_score", low=1e-9, high=MAX_GRADE_VALUE)

    def _optional_text(self, node: Node | None, what: str) -> str:
        return "" if node is None else self.r.text(node, what, max_chars=MAX_TEXT_CHARS, empty=True)

    def _harshness(self, node: Node | None, what: str, *, default: Harshness) -> Harshness:
        if node is None:
            return default
        value = self.r.text(node, what, max_chars=40, one_line=True)
        if value not in HARSHNESS_INSTRUCTIONS:
            raise self.r.fail(f"{what} must be one of {', '.join(HARSHNESS_INSTRUCTIONS)}, found {value!r}", node)
        return cast(Harshness, value)

    def _fields(self, node: Node) -> tuple[str, ...]:
        names: list[str] = []
        for item in self.r.sequence(node, "fields", min_items=1, max_items=len(FIELD_NAMES)):
            name = self.r.text(item, "a field name", max_chars=40, one_line=True)
            if name not in FIELD_NAMES:
                raise self.r.fail(f"unknown field {name!r}; the judge can see: {', '.join(FIELD_NAMES)}", item)
            if name in names:
                raise self.r.fail(f"field {name!r} is listed twice", item)
            names.append(name)
        if "response" not in names:
            raise self.r.fail("fields must include 'response', the text being graded", node)
        return tuple(names)

    def _criteria(self, node: Node, mode: Mode, harshness: Harshness) -> tuple[Criterion, ...]:
        criteria: list[Criterion] = []
        seen: dict[str, int] = {}
        for item in self.r.sequence(node, "criteria", min_items=1, max_items=MAX_CRITERIA):
            criterion = self._criterion(item, mode, harshness)
            for key in (criterion.id, "name:" + criterion.name.casefold()):
                if key in seen:
                    what = f"id {criterion.id!r}" if key == criterion.id else f"name {criterion.name!r}"
                    raise self.r.fail(f"duplicate criterion {what} (first at line {seen[key]})", item)
                seen[key] = line_of(item)
            criteria.append(criterion)
        if mode == "grading_scale":
            total = math.fsum(c.weight or 0.0 for c in criteria)
            if abs(total - 1.0) > WEIGHT_TOLERANCE:
                raise self.r.fail(f"criterion weights sum to {total:.12g}, not 1 (within 1e-9)", node)
        return tuple(criteria)

    def _criterion(self, node: Node, mode: Mode, harshness: Harshness) -> Criterion:
        r = self.r
        keys = r.mapping(node, "a criterion", allowed=CRITERION_KEYS, required=("id", "name", "definition"))
        criterion_id = r.identifier(keys["id"], "criterion id", max_chars=MAX_ID_CHARS)
        what = f"criterion {criterion_id!r}"
        if "grades" not in keys:
            raise r.fail(f"{what} has no grades (a list of options with label and value)", node)
        weight = points = None
        if mode == "grading_scale":
            if "points" in keys:
                raise r.fail(f"{what}: points are for point_deduction mode; use weight", keys["points"])
            if "weight" not in keys:
                raise r.fail(f"{what} needs a weight (weights of all criteria sum to 1)", node)
            weight = r.number(keys["weight"], f"{what} weight", low=0.0, high=1.0)
            if weight <= 0:
                raise r.fail(f"{what} weight must be above 0", keys["weight"])
        else:
            if "weight" in keys:
                raise r.fail(f"{what}: weight is for grading_scale mode; use points", keys["weight"])
            if "points" not in keys:
                raise r.fail(f"{what} needs points (deducted per occurrence)", node)
            points = r.number(keys["points"], f"{what} points", low=1e-9, high=MAX_GRADE_VALUE)
        return Criterion(
            id=criterion_id,
            name=r.text(keys["name"], f"{what} name", max_chars=MAX_NAME_CHARS, one_line=True),
            definition=r.text(keys["definition"], f"{what} definition", max_chars=MAX_TEXT_CHARS),
            grades=self._grades(keys["grades"], mode, what),
            weight=weight,
            points=points,
            harshness=self._harshness(keys.get("harshness"), f"{what} harshness", default=harshness),
        )

    def _grades(self, node: Node, mode: Mode, what: str) -> tuple[GradeOption, ...]:
        r = self.r
        options: list[GradeOption] = []
        for item in r.sequence(node, f"{what} grades", min_items=2, max_items=MAX_GRADES):
            keys = r.mapping(item, f"a grade of {what}", allowed=GRADE_KEYS, required=("label", "value"))
            label = r.text(keys["label"], f"grade label of {what}", max_chars=MAX_NAME_CHARS, one_line=True).strip()
            value = r.number(
                keys["value"],
                f"value of grade {label!r} of {what}",
                low=0.0,
                high=MAX_GRADE_VALUE,
                integer=mode == "point_deduction",
            )
            if _as_number(label) not in (None, value):
                raise r.fail(f"grade label {label!r} of {what} reads as a number other than its value {value:g}", item)
            for other in options:
                if other.label.casefold() == label.casefold():
                    raise r.fail(f"{what} has the grade label {label!r} twice", item)
                if other.value == value:
                    raise r.fail(f"{what} has two grades with value {value:g} ({other.label!r}, {label!r})", item)
            definition = self._optional_text(keys.get("definition"), f"definition of grade {label!r} of {what}")
            options.append(GradeOption(label=label, value=value, definition=definition))
        if mode == "grading_scale" and max(option.value for option in options) <= 0:
            raise r.fail(f"{what}: the best grade's value must be above 0 (scores divide by it)", node)
        return tuple(options)


def _as_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
