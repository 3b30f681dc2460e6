"""Builds a dataset folder from ChatEval-style text files: one prompt per line, references one per line."""

from __future__ import annotations

from pathlib import Path

from evaluation.dataset import Dataset, Prompt, Turn, write_dataset
from evaluation.errors import InvalidInputError
from evaluation.textfile import decode_lines, read_bytes


def _turns(line: str, separator: str | None) -> tuple[Turn, ...]:
    parts = [line] if separator is None else [part.strip() for part in line.split(separator)]
    # Roles alternate and the last turn is the user's, whom the evaluated system answers.
    last = len(parts) - 1
    return tuple(
        Turn(role="user" if (last - i) % 2 == 0 else "assistant", content=part) for i, part in enumerate(parts)
    )


def import_text(
    *,
    out: Path,
    prompts_path: Path,
    reference_paths: list[Path],
    manifest_fields: dict[str, str],
    turn_separator: str | None = None,
) -> Dataset:
    """Ids are the 0-based line numbers, as ChatEval's own judgement files number prompts."""
    if not reference_paths:
        raise InvalidInputError("at least one references file is needed")
    prompt_lines = decode_lines(read_bytes(prompts_path), name=prompts_path)
    reference_columns = []
    for path in reference_paths:
        lines = decode_lines(read_bytes(path), name=path)
        if len(lines) != len(prompt_lines):
            raise InvalidInputError(
                f"has {len(lines)} lines but the prompts file {prompts_path} has {len(prompt_lines)}",
                path=path,
            )
        reference_columns.append(lines)
    prompts = []
    for index, line in enumerate(prompt_lines):
        if not line.strip():
            raise InvalidInputError("empty prompt", path=prompts_path, line=index + 1)
        turns = _turns(line, turn_separator)
        if any(not turn.content.strip() for turn in turns):
            raise InvalidInputError("empty turn in prompt", path=prompts_path, line=index + 1)
        references = tuple(column[index] for column in reference_columns)
        prompts.append(Prompt(id=str(index), context=turns, references=references))
    return write_dataset(out, manifest_fields, prompts)
