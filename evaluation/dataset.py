"""Datasets: a folder with `manifest.json` and checksummed `prompts.jsonl`; loading verifies both."""

from __future__ import annotations

import hashlib
import json
import marshal
import operator
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from typing_extensions import TypedDict

import evaluation
from evaluation.errors import InvalidInputError, NotFoundError
from evaluation.settings import get_settings

MANIFEST = "manifest.json"
PROMPTS = "prompts.jsonl"


class Turn(BaseModel):
    """One message of a conversation, in the chat-messages shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["user", "assistant", "system"]
    content: str


class Prompt(BaseModel):
    """A conversation so far (ending with a user turn) and the reference responses to it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    context: tuple[Turn, ...] = Field(min_length=1)
    references: tuple[str, ...] = Field(min_length=1)

    @field_validator("context")
    @classmethod
    def _ends_with_user(cls, context: tuple[Turn, ...]) -> tuple[Turn, ...]:
        if context[-1].role != "user":
            raise ValueError("the last context turn must have role 'user'")
        return context


class Manifest(BaseModel):
    """Who made a dataset, under which licence, and the checksum of its prompts file."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    version: str = Field(min_length=1)
    description: str
    source: str
    license: str
    citation: str
    prompts_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class _TurnRecord(TypedDict):
    """Turn's fields as a plain dict: the same checks, without a model object per turn."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    role: Literal["user", "assistant", "system"]
    content: str


class _PromptRecord(TypedDict):
    """Prompt's fields as a plain dict (its last-turn check is made by parse_prompts)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    id: Annotated[str, Field(min_length=1)]
    context: Annotated[tuple[_TurnRecord, ...], Field(min_length=1)]
    references: Annotated[tuple[str, ...], Field(min_length=1)]


_PROMPT_RECORD = TypeAdapter(_PromptRecord)
_ROLES = {role: role for role in ("user", "assistant", "system")}  # one string object per role

Context = tuple[tuple[str, str], ...]
"""A prompt's turns as (role, content) pairs."""


class PromptTable(Sequence[Prompt]):
    """A dataset's validated prompts held as plain columns (ids, contexts as (role, content) pairs, references):
    a tenth of the memory of one model object per prompt. Indexing or iterating gives Prompt objects."""

    __slots__ = ("contexts", "ids", "references")

    def __init__(self, ids: tuple[str, ...], contexts: tuple[Context, ...], references: tuple[tuple[str, ...], ...]):
        if not len(ids) == len(contexts) == len(references):
            raise ValueError("ids, contexts and references must have one entry per prompt")
        self.ids, self.contexts, self.references = ids, contexts, references

    @classmethod
    def of(cls, prompts: Sequence[Prompt]) -> PromptTable:
        contexts = tuple(tuple((turn.role, turn.content) for turn in p.context) for p in prompts)
        return cls(tuple(p.id for p in prompts), contexts, tuple(p.references for p in prompts))

    def prompt(self, index: int) -> Prompt:
        context = [{"role": role, "content": content} for role, content in self.contexts[index]]
        return Prompt.model_validate({"id": self.ids[index], "context": context, "references": self.references[index]})

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Prompt: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Prompt, ...]: ...
    def __getitem__(self, index: int | slice) -> Prompt | tuple[Prompt, ...]:
        if isinstance(index, slice):
            return tuple(self.prompt(i) for i in range(*index.indices(len(self))))
        return self.prompt(operator.index(index))

    def __iter__(self) -> Iterator[Prompt]:
        return (self.prompt(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PromptTable):
            return (self.ids, self.contexts, self.references) == (other.ids, other.contexts, other.references)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.ids, self.contexts, self.references))

    def __repr__(self) -> str:
        return f"PromptTable({len(self)} prompts)"


@dataclass(frozen=True)
class Dataset:
    manifest: Manifest
    prompts: PromptTable
    path: Path

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def fingerprint(self) -> str:
        """Name, version and checksum prefix: enough to tell two releases of a set apart."""
        return f"{self.manifest.name}@{self.manifest.version}#{self.manifest.prompts_sha256[:12]}"

    @property
    def prompt_ids(self) -> tuple[str, ...]:
        return self.prompts.ids

    @cached_property
    def index_of(self) -> dict[str, int]:
        return {pid: i for i, pid in enumerate(self.prompt_ids)}

    @property
    def references(self) -> tuple[tuple[str, ...], ...]:
        return self.prompts.references

    def __len__(self) -> int:
        return len(self.prompts)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _format_validation(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def read_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST
    if not path.is_file():
        raise NotFoundError(f"no {MANIFEST} in dataset folder", path=folder)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"manifest is not valid JSON ({exc})", path=path) from exc
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid manifest: {_format_validation(exc)}", path=path) from exc


def _validate_prompt(line: str) -> tuple[str, Context, tuple[str, ...]]:
    """(id, context, references) of one valid prompt line, else the ValidationError that Prompt gives.

    The common case is checked as plain dicts (the same fields, parser and constraints as Prompt, at half the
    cost); any line that fails is validated again as a Prompt, so that errors read exactly as Prompt's."""
    try:
        record = _PROMPT_RECORD.validate_json(line)
    except ValidationError:
        record = None
    if record is None or record["context"][-1]["role"] != "user":
        prompt = Prompt.model_validate_json(line)  # raises the error a user reads
        return prompt.id, tuple((turn.role, turn.content) for turn in prompt.context), prompt.references
    context = tuple((_ROLES[turn["role"]], turn["content"]) for turn in record["context"])
    return record["id"], context, record["references"]


def parse_prompts(path: Path) -> PromptTable:
    ids: list[str] = []
    contexts: list[Context] = []
    references: list[tuple[str, ...]] = []
    seen: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw_line in enumerate(handle, start=1):
            try:
                line = raw_line.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise InvalidInputError("not valid UTF-8", path=path, line=number) from exc
            if not line:
                continue
            try:
                prompt_id, context, refs = _validate_prompt(line)
            except ValidationError as exc:
                raise InvalidInputError(f"invalid prompt: {_format_validation(exc)}", path=path, line=number) from exc
            if prompt_id in seen:
                raise InvalidInputError(
                    f"duplicate prompt id {prompt_id!r} (first on line {seen[prompt_id]})",
                    path=path,
                    line=number,
                )
            seen[prompt_id] = number
            ids.append(prompt_id)
            contexts.append(context)
            references.append(refs)
    if not ids:
        raise InvalidInputError("dataset has no prompts", path=path)
    return PromptTable(tuple(ids), tuple(contexts), tuple(references))


def load_dataset_dir(folder: Path) -> Dataset:
    """Load a dataset folder, refusing it when the prompts file does not match the manifest's checksum."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    prompts_path = folder / PROMPTS
    if not prompts_path.is_file():
        raise NotFoundError(f"no {PROMPTS} in dataset folder", path=folder)
    actual = sha256_file(prompts_path)
    if actual != manifest.prompts_sha256:
        raise InvalidInputError(
            f"checksum mismatch: manifest says sha256 {manifest.prompts_sha256}, file has {actual}; "
            "the prompts were changed after the manifest was written",
            path=prompts_path,
        )
    prompts = _cached_prompts(actual)
    if prompts is None:
        prompts = parse_prompts(prompts_path)
        _store_prompts(actual, prompts)
    return Dataset(manifest=manifest, prompts=prompts, path=folder)


# A prompts file, once validated, is kept as its parsed columns (marshal), named by its sha256 (already computed to
# check the manifest) and by what could change the parse: loading it again reads them back in a fifth of the time.
# Change PROMPTS_CACHE_FORMAT with any change to what parse_prompts accepts or returns. The folder keeps the
# PROMPTS_CACHE_KEPT files used last (a read counts as a use): datasets changed or gone, and other toolkit versions'
# files, make way once newer ones are written, so the cache stays bounded (about 14 MB per 100,000 prompts).
PROMPTS_CACHE_FORMAT = 1
PROMPTS_CACHE_KEPT = 16


def _prompts_cache_path(sha256: str) -> Path:
    python = "".join(map(str, sys.version_info[:2]))
    tag = f"{evaluation.__version__}-{PROMPTS_CACHE_FORMAT}-m{marshal.version}-py{python}"
    return get_settings().home / "cache" / "prompts" / f"{sha256}-{tag}.marshal"


def _cached_prompts(sha256: str) -> PromptTable | None:
    path = _prompts_cache_path(sha256)
    try:
        ids, contexts, references = marshal.loads(path.read_bytes())
        os.utime(path)  # used now: kept longest when the folder is pruned
        return PromptTable(ids, contexts, references)
    except (OSError, EOFError, ValueError, TypeError):  # none yet, or unreadable: parse the file
        return None


def _store_prompts(sha256: str, prompts: PromptTable) -> None:
    path = _prompts_cache_path(sha256)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(marshal.dumps((prompts.ids, prompts.contexts, prompts.references)))
        os.replace(temporary, path)  # whole or not at all, for concurrent loads
        _prune_prompts_cache(path.parent)
    except OSError:  # a read-only home only loses the speed-up
        temporary.unlink(missing_ok=True)


def _prune_prompts_cache(folder: Path) -> None:
    """Remove all but the PROMPTS_CACHE_KEPT cache files used last (another process's file may vanish meanwhile)."""
    used: list[tuple[float, Path]] = []
    for cached in folder.glob("*.marshal"):
        try:
            used.append((cached.stat().st_mtime, cached))
        except FileNotFoundError:
            continue
    for _, stale in sorted(used, reverse=True)[PROMPTS_CACHE_KEPT:]:
        stale.unlink(missing_ok=True)


def installed_dataset_dirs() -> dict[str, Path]:
    """Every dataset folder on the search path, by folder name (earlier folders shadow later ones)."""
    found: dict[str, Path] = {}
    for root in get_settings().dataset_search_path():
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            if (folder / MANIFEST).is_file():
                found.setdefault(folder.name, folder)
    return found


def load_dataset(name_or_dir: str | Path) -> Dataset:
    """Load a dataset by name (from the search path) or from a folder path."""
    candidate = Path(name_or_dir)
    if candidate.is_dir():
        return load_dataset_dir(candidate)
    folders = installed_dataset_dirs()
    if str(name_or_dir) in folders:
        return load_dataset_dir(folders[str(name_or_dir)])
    known = ", ".join(sorted(folders)) or "none"
    raise NotFoundError(
        f"dataset {str(name_or_dir)!r} not found (installed: {known}); "
        "see `chateval datasets list`, or fetch it with `chateval datasets fetch NAME`"
    )


def check_manifest_fields(manifest_fields: dict[str, str]) -> None:
    """Refuse invalid dataset metadata (e.g. a name with a slash) before any file is written."""
    try:
        Manifest(**manifest_fields, prompts_sha256="0" * 64)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid dataset metadata: {_format_validation(exc)}") from exc


def write_dataset(folder: Path, manifest_fields: dict[str, str], prompts: list[Prompt]) -> Dataset:
    """Write prompts and a manifest carrying their checksum, atomically: a failed write leaves no folder."""
    folder = Path(folder)
    check_manifest_fields(manifest_fields)
    if folder.exists():
        raise InvalidInputError("output folder already exists; choose another or remove it", path=folder)
    staging = folder.with_name(f".{folder.name}.partial")
    staging.mkdir(parents=True, exist_ok=False)
    try:
        prompts_path = staging / PROMPTS
        with prompts_path.open("w", encoding="utf-8", newline="\n") as handle:
            for prompt in prompts:
                handle.write(prompt.model_dump_json() + "\n")
        try:
            manifest = Manifest(**manifest_fields, prompts_sha256=sha256_file(prompts_path))
        except ValidationError as exc:
            raise InvalidInputError(f"invalid dataset metadata: {_format_validation(exc)}") from exc
        (staging / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        staging.rename(folder)
    except BaseException:
        for child in staging.iterdir():
            child.unlink()
        staging.rmdir()
        raise
    return load_dataset_dir(folder)


def reseal(folder: Path) -> Dataset:
    """Record the prompts file's current checksum in the manifest, after checking that every prompt parses."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    prompts_path = folder / PROMPTS
    parse_prompts(prompts_path)
    updated = manifest.model_copy(update={"prompts_sha256": sha256_file(prompts_path)})
    (folder / MANIFEST).write_text(updated.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return load_dataset_dir(folder)
