"""A study's accepted post-edits as a reference dataset in the toolkit's format (evaluation/dataset.py), which the
automatic metrics and judges then use like any other dataset.

One prompt per accepted post-edit: a participant's edit of a system reply that was not edited again (the last of a
chain of edits), in a participant's conversation (an admin's own test chats are left out). Its `context` is the
conversation up to that reply, as the toolkit's multi-turn context (the chat-messages shape: one turn per message on
the path from the first message, post-edits in place of what they replaced, error replies left out, images left out:
text only); the system prompt is not part of it. Its one reference is the edited reply. Prompt ids are
`study-{study}-message-{edit message id}`, in message order. The version is the time of the newest edit, so unchanged
data gives the same bytes and new edits give a new release.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlmodel import Session

from evaluation.dataset import Dataset, Manifest, Prompt, write_dataset
from hub.errors import NotFound
from hub.models import ChatMessage, User
from hub.services.studies import records as study_records
from hub.services.studies.records import StudyRecords
from hub.services.studies.studies import get_study

DEFAULT_LICENSE = "unspecified: ask the study's owner"


def accepted_edits(data: StudyRecords) -> list[ChatMessage]:
    """The last edit of every edited system reply in participants' conversations, in id order."""
    participant_chats = {c.id for c in data.chats if c.participant_id is not None}
    messages = [m for chat_id in participant_chats for m in data.messages.get(chat_id, [])]
    edited_again = {m.edit_of_id for m in messages if m.edit_of_id is not None}
    return sorted(
        (
            m
            for m in messages
            if m.role == "assistant" and m.edit_of_id is not None and m.status == "ok" and m.id not in edited_again
        ),
        key=lambda m: m.id or 0,
    )


def reference_prompts(data: StudyRecords) -> list[Prompt]:
    by_id = {m.id: m for chat_messages in data.messages.values() for m in chat_messages}
    prompts = []
    for edit in accepted_edits(data):
        path: list[ChatMessage] = []
        current = by_id.get(edit.parent_id) if edit.parent_id is not None else None
        while current is not None and len(path) <= len(by_id):
            path.append(current)
            current = by_id.get(current.parent_id) if current.parent_id is not None else None
        turns = [{"role": m.role, "content": m.content} for m in reversed(path) if m.status == "ok"]
        if not turns or turns[-1]["role"] != "user":
            continue  # an edit must answer a user turn
        prompts.append(
            Prompt.model_validate(
                {"id": f"study-{data.study_id}-message-{edit.id}", "context": turns, "references": [edit.content]}
            )
        )
    return prompts


def _edits_or_404(data: StudyRecords) -> list[Prompt]:
    prompts = reference_prompts(data)
    if not prompts:
        raise NotFound(f"study #{data.study_id} has no accepted post-edits yet", field="study_id")
    return prompts


def default_name(study_id: int) -> str:
    return f"study-{study_id}-post-edits"


def manifest_fields(data: StudyRecords, *, license: str = DEFAULT_LICENSE) -> dict[str, str]:
    newest = max((e.created_at for e in accepted_edits(data)), default=data.study.created_at)
    return {
        "name": default_name(data.study_id),
        "version": newest.strftime("%Y%m%dT%H%M%SZ"),
        "description": (
            f"Accepted post-edits of the interactive study {data.study.title!r} (#{data.study_id}): each prompt is a "
            "participant's conversation up to a system reply; the reference is the participant's edit of that reply."
        ),
        "source": f"ChatEval Hub interactive study #{data.study_id}",
        "license": license,
        "citation": "",
    }


def prompts_text(prompts: list[Prompt]) -> bytes:
    """The prompts file exactly as write_dataset writes it (so its sha256 matches the manifest)."""
    return "".join(prompt.model_dump_json() + "\n" for prompt in prompts).encode("utf-8")


def _readable(session: Session, viewer: User | None, study_id: int) -> StudyRecords:
    study = study_records.readable_study(session, viewer, study_id)
    return study_records.load(session, study, public=not (viewer is not None and viewer.is_admin))


def prompts_file(session: Session, viewer: User | None, study_id: int) -> tuple[bytes, str]:
    """The dataset's prompts.jsonl and a file name for it."""
    return prompts_text(_edits_or_404(_readable(session, viewer, study_id))), "prompts.jsonl"


def manifest_json(session: Session, viewer: User | None, study_id: int) -> bytes:
    data = _readable(session, viewer, study_id)
    digest = hashlib.sha256(prompts_text(_edits_or_404(data))).hexdigest()
    manifest = Manifest(**manifest_fields(data), prompts_sha256=digest)
    return (manifest.model_dump_json(indent=2) + "\n").encode("utf-8")  # as write_dataset writes it


def write_reference_dataset(
    session: Session, study_id: int, folder: Path, *, name: str | None = None, license: str = DEFAULT_LICENSE
) -> Dataset:
    """Write the dataset folder (checked, atomically: write_dataset's rules) from every participant's conversations."""
    data = study_records.load(session, get_study(session, study_id), public=False)
    fields = manifest_fields(data, license=license)
    if name is not None:
        fields["name"] = name
    return write_dataset(folder, fields, _edits_or_404(data))
