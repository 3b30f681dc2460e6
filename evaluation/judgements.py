"""Pairwise human judgements as column arrays, built from ratings-export records (files: evaluation.ratings_files)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evaluation.errors import InvalidInputError

RATINGS_SCHEMA_VERSION = 1
REQUIRED_FIELDS = ("prompt_id", "system_a", "system_b", "outcome")
# Every column of the hub's `ratings` download (schema version 1, documented in hub/services/exports.py), in order;
# the reader needs only REQUIRED_FIELDS and uses system_a_id/system_b_id (the systems' identities), rater, auto_tie,
# left, excluded, held_out, experiment_id and dataset if there. A held-out row (a rater the hub's screening flagged,
# awaiting an admin's decision) is left out of fits exactly like an excluded one: `excluded` holds either.
RATINGS_EXPORT_FIELDS = (
    "rating_id",
    "experiment_id",
    "dataset",
    "dataset_fingerprint",
    "prompt_id",
    "item_id",
    "item_kind",
    "system_a",
    "system_b",
    "system_a_id",
    "system_b_id",
    "left",
    "choice",
    "outcome",
    "auto_tie",
    "expected",
    "rater",
    "backend",
    "task_id",
    "assignment_id",
    "external_assignment_id",
    "created_at",
    "submitted_at",
    "seconds_on_task",
    "excluded",
    "exclusion_reason",
    "held_out",
)
OUTCOMES = {"a": 1, "b": -1, "tie": 0}
LEFT = {"a": 1, "b": 0}
VOTE_OUTCOMES = {"0": 1, "1": -1, "-1": 0}  # ChatEval votes.csv: 0 = model_1 better, 1 = model_2 better, -1 = tie
VOTES_COLUMNS = ("run", "evalset", "model_1", "model_2", "prompt", "worker", "vote")

_ARRAY_FIELDS = (
    "system_a",
    "system_b",
    "prompt",
    "rater",
    "outcome",
    "auto_tie",
    "left_is_a",
    "excluded",
    "experiment",
    "dataset",
)

_LABEL_COLUMNS = (
    ("systems", ("system_a", "system_b")),
    ("prompts", ("prompt",)),
    ("raters", ("rater",)),
    ("experiments", ("experiment",)),
    ("datasets", ("dataset",)),
)
# The canonical row order: most significant column first.
_ROW_ORDER = (
    "dataset",
    "experiment",
    "prompt",
    "system_a",
    "system_b",
    "rater",
    "outcome",
    "auto_tie",
    "left_is_a",
    "excluded",
)


def _natural(label: str) -> tuple[int, int, str]:
    """Sort key of a label: whole numbers by value first ("2" before "10"), then other labels as text."""
    return (0, int(label), label) if label.isdigit() and len(label) < 19 else (1, 0, label)


def _by_label(labels: tuple[str, ...]) -> Callable[[int], tuple[int, int, str]]:
    """Sort key of an index into `labels`: its label's natural order."""
    return lambda index: _natural(labels[index])


@dataclass(frozen=True)
class Judgements:
    """One entry per pairwise judgement (column arrays of equal length n); indices point into the label tuples.

    outcome: +1 system_a better, 0 tie, -1 system_b better. rater is -1 when unknown (and for automatic ties).
    left_is_a: 1 system_a shown on the left, 0 system_b on the left, -1 unknown. Prompt labels are the prompt ids,
    or "dataset/prompt_id" when the judgements span several datasets.

    systems are identities: the system ids (as text) when the source carries them (the hub's download does), else
    the names. system_names holds each one's display name; two systems may share a name, never an identity.
    """

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    raters: tuple[str, ...]
    experiments: tuple[str, ...]
    datasets: tuple[str, ...]
    system_a: np.ndarray  # (n,) int32
    system_b: np.ndarray  # (n,) int32
    prompt: np.ndarray  # (n,) int32
    rater: np.ndarray  # (n,) int32, -1 unknown
    outcome: np.ndarray  # (n,) int8 in {-1, 0, 1}
    auto_tie: np.ndarray  # (n,) bool
    left_is_a: np.ndarray  # (n,) int8 in {-1, 0, 1}
    excluded: np.ndarray  # (n,) bool: excluded by an admin, or held out (flagged, awaiting a decision)
    experiment: np.ndarray  # (n,) int32
    dataset: np.ndarray  # (n,) int32
    system_names: tuple[str, ...] = ()  # display name per system (defaults to the identity itself)
    keyed_by_id: bool = False  # systems are the source's system ids

    def __post_init__(self) -> None:
        n = len(self.system_a)
        for name in _ARRAY_FIELDS:
            if len(getattr(self, name)) != n:
                raise ValueError(f"column {name!r} has {len(getattr(self, name))} entries, expected {n}")
        if not self.system_names:
            object.__setattr__(self, "system_names", self.systems)
        if len(self.system_names) != len(self.systems):
            raise ValueError("system_names must name every system")

    def system_id(self, index: int) -> int | None:
        """The source's id of a system, or None when the judgements identify systems by name."""
        return int(self.systems[index]) if self.keyed_by_id else None

    def find_system(self, wanted: str | int, *, role: str = "system") -> int:
        """A system's index from its identity (an id or, without ids, the name) or from a name that only one
        system carries; an ambiguous or unknown name is refused with the candidates (`role` starts the message)."""
        text = str(wanted).strip()
        if text in self.systems:
            return self.systems.index(text)
        named = [i for i, name in enumerate(self.system_names) if name == text]
        if len(named) == 1:
            return named[0]
        if named:
            ids = ", ".join(self.systems[i] for i in named)
            raise InvalidInputError(f"{role} {text!r} names {len(named)} systems (ids {ids}); give the id instead")
        known = ", ".join(self.describe_system(i) for i in range(len(self.systems)))
        raise InvalidInputError(f"{role} {text!r} is not among the judged systems: {known}")

    def describe_system(self, index: int) -> str:
        """The name, with the id when the judgements carry ids ("echo (#3)")."""
        name = self.system_names[index]
        return f"{name} (#{self.systems[index]})" if self.keyed_by_id else name

    def __len__(self) -> int:
        return len(self.system_a)

    def subset(self, mask: np.ndarray) -> Judgements:
        """The judgements selected by a boolean mask or index array; label tuples are kept unchanged."""
        return replace(self, **{name: getattr(self, name)[mask] for name in _ARRAY_FIELDS})

    def compact(self) -> Judgements:
        """Drop labels no judgement refers to (systems, prompts, raters, ...) and renumber the indices."""
        changes: dict[str, Any] = {}
        for labels_name, columns in _LABEL_COLUMNS:
            labels = getattr(self, labels_name)
            used = np.zeros(len(labels), dtype=bool)
            for column in columns:
                values = getattr(self, column)
                used[values[values >= 0]] = True
            new_index = np.full(len(labels) + 1, -1, dtype=np.int32)  # last slot maps -1 to -1
            new_index[np.flatnonzero(used)] = np.arange(int(used.sum()), dtype=np.int32)
            changes[labels_name] = tuple(label for label, keep in zip(labels, used, strict=True) if keep)
            if labels_name == "systems":
                names = self.system_names
                changes["system_names"] = tuple(name for name, keep in zip(names, used, strict=True) if keep)
            for column in columns:
                changes[column] = new_index[getattr(self, column)]
        return replace(self, **changes)

    def canonical(self) -> Judgements:
        """The same judgements in an order that does not depend on how they were read: every label table sorted
        (numbers by value), then the rows sorted by every column. A fit and its seeded bootstrap then give the same
        numbers whether the judgements came from the hub's database, its download or a shuffled copy of it."""
        changes: dict[str, Any] = {}
        for labels_name, columns in _LABEL_COLUMNS:
            labels = getattr(self, labels_name)
            order = sorted(range(len(labels)), key=_by_label(labels))
            new_index = np.full(len(labels) + 1, -1, dtype=np.int32)  # last slot maps -1 to -1
            new_index[np.asarray(order, dtype=np.int64)] = np.arange(len(labels), dtype=np.int32)
            changes[labels_name] = tuple(labels[i] for i in order)
            if labels_name == "systems":
                changes["system_names"] = tuple(self.system_names[i] for i in order)
            for column in columns:
                changes[column] = new_index[getattr(self, column)]
        rows = np.lexsort([np.asarray(changes.get(name, getattr(self, name))) for name in reversed(_ROW_ORDER)])
        for name in _ARRAY_FIELDS:
            changes[name] = np.asarray(changes.get(name, getattr(self, name)))[rows]
        return replace(self, **changes)

    def for_dataset(self, name: str) -> Judgements:
        """The judgements of one dataset, compacted."""
        if name not in self.datasets:
            known = ", ".join(repr(d) for d in self.datasets) or "none"
            raise InvalidInputError(f"no judgements for dataset {name!r} (datasets present: {known})")
        return self.subset(self.dataset == self.datasets.index(name)).compact()

    def judgements_per_system(self) -> np.ndarray:
        """(n_systems,) number of judgements each system takes part in."""
        size = len(self.systems)
        return np.bincount(self.system_a, minlength=size) + np.bincount(self.system_b, minlength=size)


def _cell(value: object) -> object:
    """Normalise an input cell: strings stripped, empty strings to None."""
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return value


def _label(value: object, field: str, *, name: str, line: int) -> str:
    value = _cell(value)
    if value is None:
        raise InvalidInputError(f"{field!r} is empty", path=name, line=line)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInputError(f"{field!r} must be a string, not {value!r}", path=name, line=line)
    return str(value)


def _flag(value: object, field: str, *, name: str, line: int) -> bool:
    value = _cell(value)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidInputError(f"{field!r} must be true or false, not {value!r}", path=name, line=line)


class JudgementsBuilder:
    """Accumulates records into label tables and column lists."""

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, int]] = {k: {} for k in ("systems", "prompts", "raters", "experiments")}
        self.labels["datasets"] = {}
        self.columns: dict[str, list[int]] = {name: [] for name in _ARRAY_FIELDS}
        self.prompt_keys: list[tuple[str, str]] = []  # (dataset, prompt_id) per judgement, labelled at the end
        self.system_names: dict[str, str] = {}  # identity -> display name (the first one seen)
        self.keyed_by_id: bool | None = None  # decided by the first record: ids when it has system_a_id

    def system(self, record: Mapping[str, Any], side: str, *, name: str, line: int) -> str:
        """The identity of system_a or system_b: its id when the file has ids (the hub's), else its name."""
        label = _label(record[side], side, name=name, line=line)
        raw_id = _cell(record.get(f"{side}_id"))
        if self.keyed_by_id is None:
            self.keyed_by_id = raw_id is not None
        if self.keyed_by_id != (raw_id is not None):
            raise InvalidInputError(
                f"{side}_id is {'empty' if raw_id is None else 'given'} here but not on the first row; "
                "give every row its system ids or none",
                path=name,
                line=line,
            )
        if raw_id is None:
            identity = label
        else:
            if isinstance(raw_id, bool) or not str(raw_id).isdigit() or len(str(raw_id)) > 18:
                raise InvalidInputError(f"{side}_id must be a whole number, not {raw_id!r}", path=name, line=line)
            identity = str(int(str(raw_id)))
        self.system_names.setdefault(identity, label)
        return identity

    def index(self, table: str, label: str) -> int:
        return self.labels[table].setdefault(label, len(self.labels[table]))

    def add(self, record: Mapping[str, Any], *, name: str, line: int) -> None:
        missing = [f for f in REQUIRED_FIELDS if f not in record]
        if missing:
            raise InvalidInputError(f"missing field(s): {', '.join(missing)}", path=name, line=line)
        kind = _cell(record.get("item_kind"))
        if kind is not None and kind != "pair":
            return
        system_a = self.system(record, "system_a", name=name, line=line)
        system_b = self.system(record, "system_b", name=name, line=line)
        if system_a == system_b:
            raise InvalidInputError(f"system_a and system_b are both {system_a!r}", path=name, line=line)
        prompt_id = _label(record["prompt_id"], "prompt_id", name=name, line=line)
        raw_outcome = _cell(record["outcome"])
        outcome = OUTCOMES.get(raw_outcome.lower()) if isinstance(raw_outcome, str) else None
        if outcome is None:
            raise InvalidInputError(
                f"unknown outcome {raw_outcome!r}; expected 'A', 'B' or 'tie'", path=name, line=line
            )
        auto_tie = _flag(record.get("auto_tie"), "auto_tie", name=name, line=line)
        if auto_tie and outcome != 0:
            raise InvalidInputError(f"auto_tie is true but outcome is {raw_outcome!r}", path=name, line=line)
        raw_left = _cell(record.get("left"))
        left = LEFT.get(raw_left.lower(), -2) if isinstance(raw_left, str) else (-1 if raw_left is None else -2)
        if left == -2:
            raise InvalidInputError(f"unknown left {raw_left!r}; expected 'A', 'B' or empty", path=name, line=line)
        rater = _cell(record.get("rater"))
        experiment = _cell(record.get("experiment_id"))
        dataset = _cell(record.get("dataset"))
        columns = self.columns
        columns["system_a"].append(self.index("systems", system_a))
        columns["system_b"].append(self.index("systems", system_b))
        columns["rater"].append(-1 if rater is None else self.index("raters", str(rater)))
        columns["outcome"].append(outcome)
        columns["auto_tie"].append(auto_tie)
        columns["left_is_a"].append(left)
        excluded = _flag(record.get("excluded"), "excluded", name=name, line=line)
        held_out = _flag(record.get("held_out"), "held_out", name=name, line=line)
        columns["excluded"].append(excluded or held_out)
        columns["experiment"].append(self.index("experiments", "" if experiment is None else str(experiment)))
        dataset_label = "" if dataset is None else str(dataset)
        columns["dataset"].append(self.index("datasets", dataset_label))
        self.prompt_keys.append((dataset_label, prompt_id))

    def build(self, *, qualify_prompts: bool | None) -> Judgements:
        qualify = len(self.labels["datasets"]) > 1 if qualify_prompts is None else qualify_prompts
        for dataset, prompt_id in self.prompt_keys:
            key = f"{dataset}/{prompt_id}" if qualify else prompt_id
            self.columns["prompt"].append(self.index("prompts", key))
        dtypes = {"outcome": np.int8, "left_is_a": np.int8, "auto_tie": bool, "excluded": bool}
        arrays: dict[str, Any] = {k: np.asarray(v, dtype=dtypes.get(k, np.int32)) for k, v in self.columns.items()}
        arrays.update({k: tuple(v) for k, v in self.labels.items()})
        arrays["system_names"] = tuple(self.system_names[identity] for identity in arrays["systems"])
        return Judgements(**arrays, keyed_by_id=bool(self.keyed_by_id))


def from_records(
    records: Iterable[Mapping[str, Any]], *, name: str = "records", qualify_prompts: bool | None = None
) -> Judgements:
    """Build judgements from ratings-export records (dicts with at least prompt_id, system_a, system_b, outcome).

    Records whose item_kind is not "pair" (quality checks) are skipped. Prompt labels become "dataset/prompt_id"
    when qualify_prompts is true, or (when None) when the records span more than one dataset.
    """
    builder = JudgementsBuilder()
    for number, record in enumerate(records, start=1):
        builder.add(record, name=name, line=number)
    return builder.build(qualify_prompts=qualify_prompts)


__all__ = [
    "Judgements",
    "JudgementsBuilder",
    "from_records",
]
