"""Shared pieces of the judge tests: answers as the real client returns them, and pairs on the shipped dataset."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evaluation.judges.templates import Message
from evaluation.llm.client import Completion


def completion(text: str) -> Completion:
    return Completion(text=text, prompt_tokens=1, completion_tokens=1, cached=False, finish_reason="stop", model="m")


def shown_responses(messages: list[Message]) -> tuple[str, str]:
    """The two responses the template showed, first then second (read back from the rendered user message)."""
    user = messages[-1]["content"]
    first = user.split("[Response A]\n", 1)[1].split("\n[End of Response A]", 1)[0]
    second = user.split("[Response B]\n", 1)[1].split("\n[End of Response B]", 1)[0]
    return first, second


def answering(decide: Callable[[str, str], object]) -> Callable[[list[list[Message]]], Sequence[object]]:
    """A complete_many-shaped callable: `decide(first, second)` gives the answer text (or an exception) per call."""

    def complete(conversations: list[list[Message]]) -> list[object]:
        results = []
        for messages in conversations:
            answer = decide(*shown_responses(messages))
            results.append(completion(answer) if isinstance(answer, str) else answer)
        return results

    return complete
