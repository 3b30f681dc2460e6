"""Descriptive figures of a chat study from plain rows: label distributions per question, how often and how much
participants post-edited each system's replies, and where in the conversations they reversed.

A conversation is a tree of messages (each with its parent's id); a post-edit is a new assistant message whose
`edit_of_id` names the message it replaces (an edit may itself be edited again: the chain leads back to the system's
own reply). A reversal returns the conversation from its active leaf to an earlier message.

- Edit rate of a system: the share of its own replies (assistant messages that are not edits, status ok) that were
  post-edited at least once.
- Edit size of an edited reply: the word-level Levenshtein distance (insertions, deletions and substitutions of
  whitespace-separated words) from the system's reply to the last edit of it, and that distance divided by the
  number of words of the edit (HTER without shifts: the edit is the reference).
- Where reversals happen: the turn of the message returned to (1-based; a user message and the reply to it share a
  turn), its role, and how many messages of the active path were abandoned (from the leaf back to the message
  returned to, or to the two's last common message when it lay on another branch).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

VERSION = "1"
CATEGORICAL = ("binary", "choice", "likert")


@dataclass(frozen=True)
class MessageRow:
    id: int
    chat_id: int
    parent_id: int | None
    role: str
    content: str
    edit_of_id: int | None = None
    status: str = "ok"


@dataclass(frozen=True)
class RevertRow:
    chat_id: int
    from_leaf_id: int
    to_message_id: int


def word_edit_distance(original: str, edited: str) -> int:
    """Levenshtein distance between the two texts' whitespace-separated words (each operation costs 1)."""
    a, b = original.split(), edited.split()
    if not a or not b:
        return max(len(a), len(b))
    vocabulary: dict[str, int] = {}
    a_codes = np.array([vocabulary.setdefault(w, len(vocabulary)) for w in a])
    b_codes = np.array([vocabulary.setdefault(w, len(vocabulary)) for w in b])
    steps = np.arange(len(b) + 1)
    previous = steps.copy()
    for code in a_codes:
        # Deletion and substitution come from the row above; insertion (a run along the row) is a running minimum
        # of (value - position), so the row is computed without a loop over its cells.
        current = np.empty_like(previous)
        current[0] = previous[0] + 1
        current[1:] = np.minimum(previous[1:] + 1, previous[:-1] + (b_codes != code))
        current = np.minimum.accumulate(current - steps) + steps
        previous = current
    return int(previous[-1])


@dataclass(frozen=True)
class EditFigures:
    """One system's post-edits."""

    system_id: int
    replies: int
    edited: int
    edits: int
    """Edit messages (an edit of an edit counts again)."""
    mean_words_changed: float | None
    median_words_changed: float | None
    mean_relative_size: float | None
    """Mean of words changed / words of the last edit."""

    @property
    def edit_rate(self) -> float | None:
        return self.edited / self.replies if self.replies else None


def _edit_root(message: MessageRow, by_id: Mapping[int, MessageRow]) -> MessageRow:
    seen = {message.id}
    while message.edit_of_id is not None and message.edit_of_id in by_id and message.edit_of_id not in seen:
        message = by_id[message.edit_of_id]
        seen.add(message.id)
    return message


def edit_figures(
    messages: Iterable[MessageRow], system_of_chat: Mapping[int, int], systems: Iterable[int] = ()
) -> list[EditFigures]:
    """Edit rate and size per system (ordered by system id; `systems` listed too, also without conversations);
    chats missing from `system_of_chat` are left out."""
    by_id = {m.id: m for m in messages if m.chat_id in system_of_chat}
    replies: Counter[int] = Counter()
    edits: Counter[int] = Counter()
    last_edit: dict[int, MessageRow] = {}
    for message in sorted(by_id.values(), key=lambda m: m.id):
        if message.role != "assistant":
            continue
        system = system_of_chat[message.chat_id]
        if message.edit_of_id is None:
            replies[system] += message.status == "ok"
            continue
        edits[system] += 1
        last_edit[_edit_root(message, by_id).id] = message  # ids grow, so the newest edit wins
    changed: dict[int, list[int]] = defaultdict(list)
    relative: dict[int, list[float]] = defaultdict(list)
    for root_id, edit in last_edit.items():
        root = by_id[root_id]
        if root.edit_of_id is not None or root.role != "assistant":
            continue  # a chain whose start is missing
        distance = word_edit_distance(root.content, edit.content)
        system = system_of_chat[root.chat_id]
        changed[system].append(distance)
        relative[system].append(distance / max(1, len(edit.content.split())))
    return [
        EditFigures(
            system_id=system,
            replies=replies[system],
            edited=len(changed[system]),
            edits=edits[system],
            mean_words_changed=statistics.fmean(changed[system]) if changed[system] else None,
            median_words_changed=float(statistics.median(changed[system])) if changed[system] else None,
            mean_relative_size=statistics.fmean(relative[system]) if relative[system] else None,
        )
        for system in sorted({*system_of_chat.values(), *systems})
    ]


@dataclass(frozen=True)
class Reversal:
    chat_id: int
    turn: int
    """Turn of the message returned to, 1-based."""
    position: int
    """Its position on its path from the first message, 1-based."""
    role: str
    abandoned: int
    """Messages of the active path left behind."""


def _path(message_id: int, parent: Mapping[int, int | None]) -> list[int]:
    """Ids from the first message down to this one."""
    path: list[int] = []
    current: int | None = message_id
    while current is not None and current not in path:
        path.append(current)
        current = parent.get(current)
    return path[::-1]


def reversals(messages: Iterable[MessageRow], reverts: Iterable[RevertRow]) -> list[Reversal]:
    """Where each reversal went back to; reverts naming unknown messages are left out."""
    by_id = {m.id: m for m in messages}
    parent = {m.id: m.parent_id for m in by_id.values()}
    found: list[Reversal] = []
    for revert in reverts:
        target = by_id.get(revert.to_message_id)
        if target is None or revert.from_leaf_id not in by_id:
            continue
        to_path, from_path = _path(target.id, parent), _path(revert.from_leaf_id, parent)
        common = 0
        while common < min(len(to_path), len(from_path)) and to_path[common] == from_path[common]:
            common += 1
        user_turns = sum(by_id[i].role == "user" for i in to_path)
        found.append(
            Reversal(
                chat_id=revert.chat_id,
                turn=max(1, user_turns),
                position=len(to_path),
                role=target.role,
                abandoned=len(from_path) - common,
            )
        )
    return found


@dataclass
class ReversalSummary:
    """One system's reversals: how many, and how they spread over turns and abandoned depths."""

    system_id: int
    count: int = 0
    by_turn: dict[int, int] = field(default_factory=dict)
    by_abandoned: dict[int, int] = field(default_factory=dict)
    to_user_turns: int = 0
    mean_turn: float | None = None
    mean_abandoned: float | None = None


def reversal_summaries(
    found: Sequence[Reversal], system_of_chat: Mapping[int, int], systems: Iterable[int] = ()
) -> list[ReversalSummary]:
    """Per system (ordered by id; every system of `system_of_chat` and `systems` listed, with or without reversals)."""
    summaries = {s: ReversalSummary(system_id=s) for s in sorted({*system_of_chat.values(), *systems})}
    grouped: dict[int, list[Reversal]] = defaultdict(list)
    for reversal in found:
        if reversal.chat_id in system_of_chat:
            grouped[system_of_chat[reversal.chat_id]].append(reversal)
    for system, items in grouped.items():
        summary = summaries[system]
        summary.count = len(items)
        summary.by_turn = dict(sorted(Counter(r.turn for r in items).items()))
        summary.by_abandoned = dict(sorted(Counter(r.abandoned for r in items).items()))
        summary.to_user_turns = sum(r.role == "user" for r in items)
        summary.mean_turn = statistics.fmean(r.turn for r in items)
        summary.mean_abandoned = statistics.fmean(r.abandoned for r in items)
    return list(summaries.values())


@dataclass(frozen=True)
class LabelCount:
    label: str
    count: int
    share: float | None


@dataclass(frozen=True)
class Distribution:
    """Answers to one question. Categorical kinds: one count per label (labels in the schema's order, then any
    answer outside them as its own row, marked by `unknown`); multi-select: how many answers chose each option (shares
    add up to more than 1); free text: answers and non-empty answers."""

    question_id: str
    kind: str
    answers: int
    counts: tuple[LabelCount, ...] = ()
    unknown: tuple[str, ...] = ()
    non_empty: int | None = None


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def label_distribution(question_id: str, kind: str, labels: Sequence[str], values: Sequence[Any]) -> Distribution:
    """Counts of answers to one question; `values` are answers as labels (a list of labels for multi-select, text
    for free text); None values (no answer) are left out."""
    answered = [v for v in values if v is not None]
    if kind == "text":
        non_empty = sum(bool(str(v).strip()) for v in answered)
        return Distribution(question_id, kind, len(answered), non_empty=non_empty)
    if kind == "multi":
        chosen = Counter(label for v in answered for label in set(v))
    elif kind in CATEGORICAL:
        chosen = Counter(str(v) for v in answered)
    else:
        raise ValueError(f"unknown question kind {kind!r}")
    unknown = tuple(sorted(set(chosen) - set(labels)))
    rows = [LabelCount(label, chosen[label], _share(chosen[label], len(answered))) for label in [*labels, *unknown]]
    return Distribution(question_id, kind, len(answered), tuple(rows), unknown)
