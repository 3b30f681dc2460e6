"""Reshaping a conversation (ChatHF): post-editing the latest system turn (the edit becomes the history the system
is sent from then on; the original stays, on a closed branch), going back to an earlier turn (the abandoned branch
stays), and marking a branch successful or not."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session

from evaluation.chat_edits import changed_spans
from hub.errors import Conflict, NotFound, UnprocessableInput
from hub.models import ChatBranch, ChatMessage, ChatRevert, Study
from hub.services.studies import assistance, studies
from hub.services.studies.chats import active_path, chat_for, message_of, move_leaf, open_branch
from hub.services.studies.participants import Viewer, participant_for
from hub.services.studies.turns import checked_content

MAX_REASON_CHARS = 5_000


class EditForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(max_length=20_000)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
    draft_id: int | None = Field(default=None, ge=1, le=2**63 - 1, description="A real-time draft the edit used.")


class RevertForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: int = Field(ge=1, le=2**63 - 1)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)


class OutcomeForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    successful: bool


def _close_branch(session: Session, chat, closed_by: str, reason: str | None) -> None:
    branch = open_branch(session, chat)
    if branch is not None:
        branch.closed_by, branch.reason, branch.successful = closed_by, reason, False
        session.add(branch)
        session.flush()


def _reason(reason: str | None) -> str | None:
    return (reason or "").strip() or None


def edit(session: Session, viewer: Viewer, chat_id: int, message_id: int, form: EditForm) -> ChatMessage:
    """A post-edit of the latest system turn of the active branch: a new message beside the original (same parent,
    `edit_of_id` the original) with the changed spans; the original's branch is closed."""
    chat = chat_for(session, viewer, chat_id, writing=True)
    original = message_of(session, chat, message_id)
    if original.role != "assistant" or original.id != chat.current_leaf_id or original.status != "ok":
        raise Conflict(
            "only the latest system turn of the active branch can be edited (a finished reply)", field="message_id"
        )
    content = checked_content(form.content)
    study = session.get(Study, chat.study_id)
    assert study is not None
    reason = _reason(form.reason)
    if reason is None and studies.schema_version(session, study).definition.get("edit_reason_required"):
        raise UnprocessableInput("this study asks for the reason of every edit", field="reason")
    spans = changed_spans(original.content, content)
    if not spans:
        raise UnprocessableInput("the edit changes no word of the reply", field="content")
    if form.draft_id is not None:  # MILO's real-time arm: how much of the judge's draft the edit kept
        participant = participant_for(session, viewer, chat.study_id)
        participant_id = participant.id if participant else None
        assistance.record_final_text(
            session, chat, original.id or 0, participant_id, form.draft_id, content, field="draft_id"
        )
    _close_branch(session, chat, "edit", reason)
    edited = ChatMessage(
        chat_id=chat.id or 0,
        parent_id=original.parent_id,
        depth=original.depth,
        role="assistant",
        content=content,
        edit_of_id=original.id,
        edit_reason=reason,
        edit_spans=spans,
    )
    session.add(edited)
    session.flush()
    move_leaf(session, chat, edited)
    session.commit()
    session.refresh(edited)
    return edited


def revert(session: Session, viewer: Viewer, chat_id: int, form: RevertForm) -> ChatRevert:
    """Go back to an earlier system turn of the active branch: it becomes the active leaf; the branch left is kept
    (closed, with the reason)."""
    chat = chat_for(session, viewer, chat_id, writing=True)
    target = session.get(ChatMessage, form.message_id)
    if target is None or target.chat_id != chat.id:  # unknown, or another conversation's: the same answer
        raise UnprocessableInput(
            f"message #{form.message_id} is not a message of this conversation", field="message_id"
        )
    path = active_path(session, chat)
    if target.id == chat.current_leaf_id or target not in path:
        raise Conflict("go back to an earlier turn of the active branch", field="message_id")
    if target.role != "assistant" or target.status != "ok":
        raise Conflict(
            "go back to a system turn (the conversation continues with your next message)", field="message_id"
        )
    reason = _reason(form.reason)
    record = ChatRevert(
        chat_id=chat.id or 0,
        from_leaf_id=chat.current_leaf_id or 0,
        to_message_id=target.id or 0,
        depth=target.depth,
        reason=reason,
    )
    _close_branch(session, chat, "revert", reason)
    session.add(record)
    session.flush()
    move_leaf(session, chat, target)
    session.commit()
    session.refresh(record)
    return record


def set_outcome(session: Session, viewer: Viewer, chat_id: int, branch_id: int, form: OutcomeForm) -> ChatBranch:
    """Mark a branch of this conversation successful or not."""
    chat = chat_for(session, viewer, chat_id)
    branch = session.get(ChatBranch, branch_id)
    if branch is None or branch.chat_id != chat.id:
        raise NotFound(f"conversation #{chat.id} has no branch #{branch_id}", field="branch_id")
    branch.successful = form.successful
    session.add(branch)
    session.commit()
    session.refresh(branch)
    return branch
