"""Items a rubric grades, built from a dataset and response files: the judge's fields plus the ids kept."""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.dataset import Dataset, Prompt


def render_context(prompt: Prompt) -> str:
    """The conversation so far, one turn per line: `user: ...`, `assistant: ...`."""
    return "\n".join(f"{turn.role}: {turn.content}" for turn in prompt.context)


def render_references(prompt: Prompt) -> str:
    """The reference response, or the references numbered one per line when there are several."""
    if len(prompt.references) == 1:
        return prompt.references[0]
    return "\n".join(f"[{index}] {text}" for index, text in enumerate(prompt.references, start=1))


def dataset_items(dataset: Dataset, responses: Sequence[str], *, source: tuple[str, str]) -> list[dict[str, str]]:
    """One item per prompt: `prompt_id`, the source's id key and value (e.g. ("system", "s1"), or ("rater", "r7")
    in MILO's QA use), and the `context`, `response` and `reference` fields."""
    if len(responses) != len(dataset):
        raise ValueError(f"{len(responses)} responses for {len(dataset)} prompts")
    key, value = source
    return [
        {
            "prompt_id": prompt.id,
            key: value,
            "context": render_context(prompt),
            "response": response,
            "reference": render_references(prompt),
        }
        for prompt, response in zip(dataset.prompts, responses, strict=True)
    ]
