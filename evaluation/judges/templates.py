"""Versioned pairwise prompt templates: the messages a judge is sent for one pair shown in one order.

A template's version is part of the judge's identity (`rater` in its judgements): change the wording, bump the
version. The answer format is fixed: the judge ends with exactly one of `[[A]]`, `[[B]]` or `[[tie]]`, where A is
the response shown first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.dataset import Turn
from evaluation.errors import NotFoundError

Message = dict[str, str]


@dataclass(frozen=True)
class PairwiseTemplate:
    """A system message and a user message with `{conversation}`, `{response_a}` and `{response_b}` slots."""

    version: str
    system: str
    user: str

    def render(self, context: Sequence[Turn], first: str, second: str) -> list[Message]:
        """The chat messages for one order: `first` is shown as Response A, `second` as Response B."""
        conversation = "\n".join(f"{turn.role.upper()}: {turn.content}" for turn in context)
        user = self.user.format(conversation=conversation, response_a=first, response_b=second)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


PAIRWISE_V1 = PairwiseTemplate(
    version="pairwise-v1",
    system=(
        "You are an impartial judge of chatbot responses. You compare two responses to the same conversation and "
        "decide which one a thoughtful user would prefer: relevant, coherent, fluent, engaging and appropriate. "
        "Do not let the order of the responses or their length influence you."
    ),
    user=(
        "[Conversation]\n{conversation}\n[End of conversation]\n\n"
        "[Response A]\n{response_a}\n[End of Response A]\n\n"
        "[Response B]\n{response_b}\n[End of Response B]\n\n"
        "Explain your reasoning in at most three sentences. Then, on the last line, give your verdict as exactly "
        "one of: [[A]] if Response A is better, [[B]] if Response B is better, [[tie]] if neither is better."
    ),
)

TEMPLATES = {template.version: template for template in (PAIRWISE_V1,)}
DEFAULT_TEMPLATE = PAIRWISE_V1.version


def get_template(version: str) -> PairwiseTemplate:
    """The template of a version; unknown versions are refused with the known ones."""
    template = TEMPLATES.get(version)
    if template is None:
        raise NotFoundError(f"unknown pairwise template {version!r} (known: {', '.join(sorted(TEMPLATES))})")
    return template
