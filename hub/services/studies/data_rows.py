"""A study's data as download rows: the study itself, its conversations as trees in the chat-messages shape, and
its annotations; the same rows go into the per-study downloads (hub/services/studies/downloads.py: admins, or anyone
once published) and into the hub's public downloads and snapshots (hub/services/publishing: published studies only).

Participants appear only as their rater's public (salted) hash, never by the private external id or an invite; an
admin's own test conversations and endpoint error texts are left out of public rows. Systems are identified by id
(the label is a name for people); endpoints, keys and system prompts are never in any row.

- `studies`: id, title, instructions, status, schema_version, schemas (every version: [{version, definition}]),
  systems ([{id, label, model, temperature, max_tokens, history_turns, vision}]), assistance, created_at, updated_at.
- `study_conversations` (JSONL: one line per conversation): study_id, conversation_id, system_id, system, participant,
  arm, status, current_leaf_id, created_at, updated_at, messages, branches, reverts. `messages` is the tree in the
  chat-messages shape: [{id, parent_id, role, content, images: [{sha256, mime, size}], status, error, edit_of_id,
  edit_reason, edit_spans, depth, latency_ms, prompt_tokens, completion_tokens, created_at}]; parent ids form the
  tree; a post-edit is a message with `edit_of_id`, beside the original under the same parent. `branches`: [{id,
  leaf_id, closed_by (edit | revert | null while open), reason, successful, created_at}]. `reverts`: [{id,
  from_leaf_id, to_message_id, depth, reason, created_at}].
- `study_annotations` (CSV: one row per answer): id, study_id, conversation_id, message_id, role, system_id,
  participant, arm, question_id, schema_version, kind, value (the answer as JSON text: true, 3, "option", ["a","b"],
  "free text"), label (what the value stands for in its schema version: binary true = the second label, a Likert
  point its label; empty for free text), explanation, handling_ms, suggestion_id, suggestion_value (JSON text),
  suggestion_confidence, created_at, updated_at.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlmodel import Session

from hub.models import ChatMessage
from hub.services.studies import records as study_records
from hub.services.studies.records import StudyRecords, answer_label
from hub.storage import Storage

Row = dict[str, Any]

STUDY_FIELDS = (
    "id",
    "title",
    "instructions",
    "status",
    "schema_version",
    "schemas",
    "systems",
    "assistance",
    "created_at",
    "updated_at",
)
CONVERSATION_FIELDS = (
    "study_id",
    "conversation_id",
    "system_id",
    "system",
    "participant",
    "arm",
    "status",
    "current_leaf_id",
    "created_at",
    "updated_at",
    "messages",
    "branches",
    "reverts",
)
ANNOTATION_FIELDS = (
    "id",
    "study_id",
    "conversation_id",
    "message_id",
    "role",
    "system_id",
    "participant",
    "arm",
    "question_id",
    "schema_version",
    "kind",
    "value",
    "label",
    "explanation",
    "handling_ms",
    "suggestion_id",
    "suggestion_value",
    "suggestion_confidence",
    "created_at",
    "updated_at",
)
TABLES = {"studies": STUDY_FIELDS, "study_conversations": CONVERSATION_FIELDS, "study_annotations": ANNOTATION_FIELDS}
DESCRIPTIONS = {
    "studies": "Closed, published interactive studies: schema versions, systems (labels and models), assistance.",
    "study_conversations": "Their participants' conversations as trees (messages, post-edits, branches, reversals).",
    "study_annotations": "Participants' per-turn answers, with the schema version and any suggestion shown.",
}
_json_text = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def _stamp(value) -> str | None:
    return value.isoformat() if value is not None else None


def study_row(data: StudyRecords) -> Row:
    study = data.study
    return {
        "id": study.id,
        "title": study.title,
        "instructions": study.instructions,
        "status": study.status,
        "schema_version": study.schema_version,
        "schemas": [{"version": v, "definition": data.schemas[v]} for v in sorted(data.schemas)],
        "systems": [
            {
                "id": system.id,
                "label": system.label,
                "model": system.model,
                "temperature": system.temperature,
                "max_tokens": system.max_tokens,
                "history_turns": system.history_turns,
                "vision": system.vision,
            }
            for _, system in sorted(data.systems.items())
        ],
        "assistance": study.assistance,
        "created_at": _stamp(study.created_at),
        "updated_at": _stamp(study.updated_at),
    }


def _message(message: ChatMessage, public: bool) -> Row:
    return {
        "id": message.id,
        "parent_id": message.parent_id,
        "role": message.role,
        "content": message.content,
        "images": [{"sha256": i.get("key"), "mime": i.get("mime"), "size": i.get("size")} for i in message.images],
        "status": message.status,
        "error": None if public else message.error,
        "edit_of_id": message.edit_of_id,
        "edit_reason": message.edit_reason,
        "edit_spans": message.edit_spans,
        "depth": message.depth,
        "latency_ms": message.latency_ms,
        "prompt_tokens": message.prompt_tokens,
        "completion_tokens": message.completion_tokens,
        "created_at": _stamp(message.created_at),
    }


def conversation_rows(data: StudyRecords) -> Iterator[Row]:
    for chat in data.chats:
        assert chat.id is not None
        system = data.systems.get(chat.system_id)
        yield {
            "study_id": data.study_id,
            "conversation_id": chat.id,
            "system_id": chat.system_id,
            "system": system.label if system else None,
            "participant": data.participant_hash.get(chat.participant_id) if chat.participant_id else None,
            "arm": data.arm_of(chat),
            "status": chat.status,
            "current_leaf_id": chat.current_leaf_id,
            "created_at": _stamp(chat.created_at),
            "updated_at": _stamp(chat.updated_at),
            "messages": [_message(m, data.public) for m in data.messages.get(chat.id, [])],
            "branches": [
                {
                    "id": b.id,
                    "leaf_id": b.leaf_id,
                    "closed_by": b.closed_by,
                    "reason": b.reason,
                    "successful": b.successful,
                    "created_at": _stamp(b.created_at),
                }
                for b in data.branches.get(chat.id, [])
            ],
            "reverts": [
                {
                    "id": r.id,
                    "from_leaf_id": r.from_leaf_id,
                    "to_message_id": r.to_message_id,
                    "depth": r.depth,
                    "reason": r.reason,
                    "created_at": _stamp(r.created_at),
                }
                for r in data.reverts.get(chat.id, [])
            ],
        }


def annotation_rows(data: StudyRecords) -> Iterator[Row]:
    chats = {c.id: c for c in data.chats}
    messages = {m.id: m for chat_messages in data.messages.values() for m in chat_messages}
    for annotation in data.annotations:
        message = messages.get(annotation.message_id)
        chat = chats.get(message.chat_id) if message else None
        if message is None or chat is None:
            continue
        question = data.question(annotation.schema_version, annotation.question_id)
        suggestion = data.suggestions.get(annotation.suggestion_id) if annotation.suggestion_id else None
        participant = annotation.participant_id
        yield {
            "id": annotation.id,
            "study_id": data.study_id,
            "conversation_id": chat.id,
            "message_id": message.id,
            "role": message.role,
            "system_id": chat.system_id,
            "participant": data.participant_hash.get(participant) if participant else None,
            "arm": data.arm_of(chat),
            "question_id": annotation.question_id,
            "schema_version": annotation.schema_version,
            "kind": question["kind"] if question else None,
            "value": _json_text(annotation.value),
            "label": answer_label(question, annotation.value),
            "explanation": annotation.explanation,
            "handling_ms": annotation.handling_ms,
            "suggestion_id": annotation.suggestion_id,
            "suggestion_value": _json_text(suggestion.value) if suggestion else None,
            "suggestion_confidence": suggestion.confidence if suggestion else None,
            "created_at": _stamp(annotation.created_at),
            "updated_at": _stamp(annotation.updated_at),
        }


def rows(data: StudyRecords, kind: str) -> Iterator[Row]:
    if kind == "studies":
        return iter([study_row(data)])
    return conversation_rows(data) if kind == "study_conversations" else annotation_rows(data)


def published_rows(kind: str):
    """The snapshot's row source for `kind`: every published study's rows, studies in id order."""

    def source(session: Session, _storage: Storage) -> Iterator[Row]:
        for study in study_records.published_studies(session):
            yield from rows(study_records.load(session, study, public=True), kind)

    return source
