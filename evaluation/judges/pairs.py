"""The pairs a judge is asked about: those of a human experiment's ratings file, or every pair of systems (or every
system against a baseline) on a whole dataset, each with the conversation and both responses."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.dataset import Dataset, Turn
from evaluation.errors import InvalidInputError
from evaluation.judgements import Judgements

MAX_SYSTEM_LABEL_CHARS = 120
MAX_SYSTEM_ID = 10**18


@dataclass(frozen=True)
class SystemRef:
    """A judged system: its name (a label) and, when it is a hub system, its id (its identity)."""

    name: str
    id: int | None = None

    @property
    def identity(self) -> str:
        return str(self.id) if self.id is not None else self.name

    def describe(self) -> str:
        return f"{self.name} (#{self.id})" if self.id is not None else self.name


def parse_system(label: str) -> SystemRef:
    """`NAME` or `NAME#ID` (a hub system's id: digits after the last '#'); bounded, printable."""
    text = label.strip()
    name, _, raw_id = text.rpartition("#")
    if not (name and raw_id.isascii() and raw_id.isdigit()):
        name, raw_id = text, ""
    if raw_id and int(raw_id) >= MAX_SYSTEM_ID:
        raise InvalidInputError(f"system {label!r}: the id after '#' is too large")
    if not name or len(name) > MAX_SYSTEM_LABEL_CHARS or not name.isprintable():
        raise InvalidInputError(
            f"system {label!r}: a name of 1 to {MAX_SYSTEM_LABEL_CHARS} printable characters is needed"
        )
    return SystemRef(name, int(raw_id) if raw_id else None)


@dataclass(frozen=True)
class JudgePair:
    """One item to judge: a prompt of a dataset and two systems' responses to it."""

    dataset: str
    dataset_fingerprint: str
    prompt_id: str
    context: tuple[Turn, ...]
    system_a: SystemRef
    system_b: SystemRef
    response_a: str
    response_b: str

    @property
    def identical(self) -> bool:
        """Responses equal up to whitespace: an automatic tie, never sent to the judge (as the hub never shows them)."""
        return " ".join(self.response_a.split()) == " ".join(self.response_b.split())


def _pair(dataset: Dataset, index: int, a: SystemRef, b: SystemRef, responses: Mapping[SystemRef, Sequence[str]]):
    prompt = dataset.prompts[index]
    return JudgePair(
        dataset=dataset.name,
        dataset_fingerprint=dataset.fingerprint,
        prompt_id=prompt.id,
        context=prompt.context,
        system_a=a,
        system_b=b,
        response_a=responses[a][index],
        response_b=responses[b][index],
    )


def _check_responses(dataset: Dataset, responses: Mapping[SystemRef, Sequence[str]]) -> None:
    identities = [system.identity for system in responses]
    duplicated = sorted({i for i in identities if identities.count(i) > 1})
    if duplicated:
        raise InvalidInputError(f"--responses names system(s) twice: {', '.join(duplicated)}")
    for system, texts in responses.items():
        if len(texts) != len(dataset):
            raise InvalidInputError(
                f"responses of {system.describe()}: {len(texts)} for the {len(dataset)} prompts of {dataset.name}"
            )


def dataset_pairs(
    dataset: Dataset, responses: Mapping[SystemRef, Sequence[str]], *, baseline: SystemRef | None = None
) -> list[JudgePair]:
    """Every prompt of the dataset for every pair of systems (in the order given), or, with a baseline, for the
    baseline (as system_a) against each other system."""
    _check_responses(dataset, responses)
    with_ids = [system.describe() for system in responses if system.id is not None]
    if with_ids and len(with_ids) != len(responses):
        without = ", ".join(system.name for system in responses if system.id is None)
        raise InvalidInputError(
            f"systems {', '.join(with_ids)} have hub ids and {without} not: give every system NAME#ID, or none"
        )
    systems = list(responses)
    if len(systems) < 2:
        raise InvalidInputError("at least two systems' responses are needed to judge pairs")
    if baseline is not None:
        matches = [s for s in systems if s == baseline or (baseline.id is None and s.name == baseline.name)]
        if len(matches) != 1:
            known = ", ".join(s.describe() for s in systems)
            raise InvalidInputError(f"baseline {baseline.describe()} is not one of the systems given: {known}")
        couples = [(matches[0], other) for other in systems if other != matches[0]]
    else:
        couples = list(itertools.combinations(systems, 2))
    return [_pair(dataset, i, a, b, responses) for a, b in couples for i in range(len(dataset))]


def _match_system(
    judgements: Judgements, index: int, responses: Mapping[SystemRef, Sequence[str]]
) -> tuple[SystemRef, Sequence[str]] | None:
    """A judged system with its responses: matched by id when the file has ids (a name given without an id on the
    command line matches too, and takes the file's id), else by name; None when nothing or several match."""
    name = judgements.system_names[index]
    if judgements.keyed_by_id:
        wanted = int(judgements.systems[index])
        matches = [s for s in responses if s.id == wanted] or [s for s in responses if s.id is None and s.name == name]
    else:
        matches = [s for s in responses if s.name == name]
    if len(matches) != 1:
        return None
    ref = matches[0]
    return SystemRef(ref.name, judgements.system_id(index)), responses[ref]


def ratings_pairs(
    judgements: Judgements, dataset: Dataset, responses: Mapping[SystemRef, Sequence[str]]
) -> list[JudgePair]:
    """Each distinct (prompt, system pair) of a human experiment's judgements (one dataset's), oriented as first
    judged. Systems are matched to response files by id (`NAME#ID`) or, failing that, by name."""
    _check_responses(dataset, responses)
    used = sorted(set(judgements.system_a.tolist()) | set(judgements.system_b.tolist()))
    matched = {i: _match_system(judgements, i, responses) for i in used}
    missing = [judgements.describe_system(i) for i in used if matched[i] is None]
    if missing:
        given = ", ".join(s.describe() for s in responses) or "none"
        raise InvalidInputError(
            f"no responses for judged system(s) {', '.join(missing)} (given: {given}); add --responses NAME=FILE "
            "(or NAME#ID=FILE)"
        )
    systems = {i: m for i, m in matched.items() if m is not None}
    texts = {ref: values for ref, values in systems.values()}
    seen: set[tuple[int, frozenset[int]]] = set()
    unknown: list[str] = []
    pairs = []
    for a, b, p in zip(
        judgements.system_a.tolist(), judgements.system_b.tolist(), judgements.prompt.tolist(), strict=True
    ):
        key = (p, frozenset((a, b)))
        if key in seen:
            continue
        seen.add(key)
        index = dataset.index_of.get(judgements.prompts[p])
        if index is None:
            unknown.append(judgements.prompts[p])
            continue
        pairs.append(_pair(dataset, index, systems[a][0], systems[b][0], texts))
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise InvalidInputError(f"{len(unknown)} judged prompt(s) are not in dataset {dataset.name}: {shown}")
    return pairs
