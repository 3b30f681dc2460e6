"""Reference log-likelihoods from an endpoint's `/completions` with `echo` and `logprobs` (for perplexity)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluation.dataset import Prompt
from evaluation.llm.errors import EndpointMalformed

ROLE_LABELS = {"system": "System", "user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class ReferenceScore:
    logprob: float
    tokens: int
    cached: bool


def render_prefix(prompt: Prompt, system_prompt: str | None = None) -> str:
    """The conversation as plain text ending in 'Assistant:'; the reference is scored as what follows it.

    A completions endpoint takes text, not messages, so the chat is rendered in one fixed, documented template
    (not the model's own chat template): perplexities are comparable across systems scored the same way.
    """
    lines = [f"System: {system_prompt}"] if system_prompt else []
    lines += [f"{ROLE_LABELS[turn.role]}: {turn.content}" for turn in prompt.context]
    return "\n".join([*lines, "Assistant:"])


def echo_body(model: str, prefix: str, reference: str) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": f"{prefix} {reference}",
        "max_tokens": 1,
        "echo": True,
        "logprobs": 0,
        "temperature": 0.0,
    }


def parse_echo(data: Any, *, start: int, end: int, cached: bool) -> ReferenceScore:
    """Sum the log-probabilities of the echoed tokens that begin inside [start, end) of the prompt text."""
    try:
        detail = data["choices"][0]["logprobs"]
        tokens, logprobs, offsets = detail["tokens"], detail["token_logprobs"], detail["text_offset"]
    except (KeyError, IndexError, TypeError):
        raise EndpointMalformed("the completions answer has no echoed token log-probabilities") from None
    if not (isinstance(tokens, list) and isinstance(logprobs, list) and isinstance(offsets, list)):
        raise EndpointMalformed("the completions answer's logprobs are not lists")
    if not len(tokens) == len(logprobs) == len(offsets):
        raise EndpointMalformed("the completions answer's tokens, token_logprobs and text_offset differ in length")
    chosen = [lp for lp, off in zip(logprobs, offsets, strict=True) if isinstance(off, int) and start <= off < end]
    if not chosen or not all(isinstance(lp, int | float) and not isinstance(lp, bool) for lp in chosen):
        raise EndpointMalformed("the endpoint gave no log-probability for some token of the reference")
    total = float(sum(chosen))
    if total > 0 or total != total:
        raise EndpointMalformed(f"the endpoint's log-probability of the reference is {total}, not <= 0")
    return ReferenceScore(logprob=total, tokens=len(chosen), cached=cached)
