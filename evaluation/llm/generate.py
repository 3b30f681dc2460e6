"""Generation from a live system: each prompt's conversation sent to an endpoint, answers appended durably."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from evaluation.dataset import Dataset, Prompt
from evaluation.errors import InvalidInputError
from evaluation.llm.client import ChatClient, Completion
from evaluation.llm.errors import EndpointError
from evaluation.llm.loglik import ReferenceScore, echo_body, parse_echo, render_prefix
from evaluation.responses import check_prompt_id, parse_jsonl_records


@dataclass
class GenerationReport:
    """What a run did: prompts already done before it, lines it wrote, and the prompts that failed (by id)."""

    total: int
    already_done: int = 0
    written: int = 0
    failed: list[tuple[str, EndpointError]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.failed and self.already_done + self.written == self.total


def conversation(prompt: Prompt, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The chat messages sent for a prompt: the optional system prompt, then its context turns."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": turn.role, "content": turn.content} for turn in prompt.context]


def done_prompt_ids(path: Path, dataset: Dataset, keys: frozenset[str]) -> set[str]:
    """Prompt ids already in an output file being resumed; a torn last line (killed mid-write) is cut off first.

    The file must be this kind of output for this dataset: any other line is refused, naming it.
    """
    if not path.exists():
        return set()
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    if cut < len(data):  # the tail after the last newline was never finished
        with path.open("r+b") as handle:
            handle.truncate(cut)
            handle.flush()
            os.fsync(handle.fileno())
        data = data[:cut]
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise InvalidInputError("cannot resume: the existing file is not UTF-8", path=path) from exc
    seen: dict[str, int] = {}
    for number, record in parse_jsonl_records(lines, name=path):
        if set(record) != keys:
            raise InvalidInputError(
                f"cannot resume: line is not a generation output (keys {', '.join(sorted(keys))})",
                path=path,
                line=number,
            )
        check_prompt_id(record["prompt_id"], dataset=dataset, seen=seen, name=path, number=number)
    return set(seen)


class DurableJsonl:
    """Appends one JSON object per line, flushed and fsynced, so a kill loses at most the line being written."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("ab")

    def append(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def generate_responses(
    dataset: Dataset,
    client: ChatClient,
    out: str | Path,
    *,
    system_prompt: str | None = None,
    progress: bool = True,
) -> GenerationReport:
    """Write `{"prompt_id", "response"}` lines for every prompt not yet in `out` (resuming where a run stopped)."""
    out = Path(out)
    done = done_prompt_ids(out, dataset, frozenset({"prompt_id", "response"}))
    pending = [p for p in dataset.prompts if p.id not in done]
    report = GenerationReport(total=len(dataset), already_done=len(done))
    writer = DurableJsonl(out)

    def on_result(index: int, result: Completion | EndpointError) -> None:
        prompt_id = pending[index].id
        if isinstance(result, EndpointError):
            report.failed.append((prompt_id, result))
        else:
            writer.append({"prompt_id": prompt_id, "response": result.text})
            report.written += 1

    try:
        client.complete_many(
            [conversation(p, system_prompt) for p in pending],
            progress="generating" if progress else False,
            on_result=on_result,
        )
    finally:
        writer.close()
    return report


def generate_loglik(
    dataset: Dataset,
    client: ChatClient,
    out: str | Path,
    *,
    system_prompt: str | None = None,
    progress: bool = True,
) -> GenerationReport:
    """Write `{"prompt_id", "logprob", "tokens"}` for each prompt's first reference, resuming like responses."""
    out = Path(out)
    done = done_prompt_ids(out, dataset, frozenset({"prompt_id", "logprob", "tokens"}))
    pending = [p for p in dataset.prompts if p.id not in done]
    report = GenerationReport(total=len(dataset), already_done=len(done))
    jobs: list[tuple[str, dict[str, Any], Callable[..., ReferenceScore]]] = []
    for prompt in pending:
        prefix = render_prefix(prompt, system_prompt)
        body = echo_body(client.config.model, prefix, prompt.references[0])
        end = len(body["prompt"])
        jobs.append(("/completions", body, partial(parse_echo, start=len(prefix), end=end)))
    writer = DurableJsonl(out)

    def on_result(index: int, result: ReferenceScore | EndpointError) -> None:
        prompt_id = pending[index].id
        if isinstance(result, EndpointError):
            report.failed.append((prompt_id, result))
        else:
            writer.append({"prompt_id": prompt_id, "logprob": result.logprob, "tokens": result.tokens})
            report.written += 1

    try:
        client.run_jobs(jobs, progress="log-likelihoods" if progress else False, on_result=on_result)
    finally:
        writer.close()
    return report
