"""Cross-review: a participant of an open study annotates the turns of OTHER participants' finished conversations
(read-only: nothing is sent, edited, reverted or finished), so that some turns carry several participants' answers
and agreement between participants can be estimated at all (a participant otherwise annotates only their own turns).

Who may review: a participant of the conversation's study, not its author, while the study is open and the
conversation finished; everyone else gets the same 404 as for a conversation that does not exist. A reviewer reads
the conversation and only their own answers (never the author's or another reviewer's).

The arm a reviewer annotates in (which assistance they are shown, and where the assistance report counts them) is
the arm of the unit the study randomised: under participant randomisation the reviewer's own arm (the author's arm
says nothing about the reviewer), under conversation randomisation the conversation's arm (the conversation is the
randomised unit: everyone who annotates it is exposed to its condition, and the report's paired analysis over
participants stays valid since each participant annotates conversations of several arms)."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, func, select

from hub.errors import NotFound
from hub.models import Chat, ChatAnnotation, ChatMessage, Study, StudyParticipant
from hub.services.studies.participants import Viewer, participant_for, readable_chat


def randomises_conversations(study: Study) -> bool:
    settings = study.assistance or {}
    return settings.get("mode", "none") != "none" and settings.get("randomise", "participant") == "conversation"


def annotator_arm(study: Study, chat: Chat, annotator: StudyParticipant | None) -> str | None:
    """The arm under which `annotator` answers about `chat`: the conversation's own for its author (and for anyone
    when conversations are randomised), else the annotator's (participant randomisation)."""
    if annotator is None or annotator.id == chat.participant_id or randomises_conversations(study):
        return chat.arm
    return annotator.arm


def reviewable_chat(session: Session, viewer: Viewer, chat_id: int) -> tuple[Chat, StudyParticipant]:
    """Another participant's finished conversation that this viewer, a participant of the same open study, may
    review; 404 alike otherwise."""
    chat = session.get(Chat, chat_id)
    if chat is not None and chat.participant_id is not None and chat.status == "finished":
        reviewer = participant_for(session, viewer, chat.study_id)
        study = session.get(Study, chat.study_id)
        if reviewer is not None and reviewer.id != chat.participant_id and study is not None and study.status == "open":
            return chat, reviewer
    raise NotFound(f"no conversation #{chat_id}", field="conversation_id")


def is_reviewer(viewer: Viewer, chat: Chat) -> bool:
    """The viewer reads this conversation as a reviewer (a participant of its study other than its author)."""
    mine = viewer.participant_in(chat.study_id)
    return not viewer.is_admin and mine is not None and chat.participant_id is not None and mine != chat.participant_id


def viewable_chat(session: Session, viewer: Viewer, chat_id: int) -> Chat:
    """The conversation this viewer may read and annotate: their own (or any, for an admin), or one they review."""
    try:
        return readable_chat(session, viewer, chat_id)
    except NotFound:
        return reviewable_chat(session, viewer, chat_id)[0]


def next_for_review(session: Session, viewer: Viewer, study_id: int) -> dict[str, Any]:
    """The next conversation for this participant to review: a finished conversation of another participant of
    the study that they have not answered anything about yet, the one with the fewest reviewers so far (the lowest
    id among equals). {"conversation_id": None, ...} when there is none."""
    reviewer = participant_for(session, viewer, study_id)
    study = session.get(Study, study_id)
    if reviewer is None or study is None:
        raise NotFound(f"no study #{study_id}", field="study_id")
    if study.status != "open":
        return {"conversation_id": None, "reason": f"the study is {study.status}", "remaining": 0}
    # reviewers per conversation: participants other than its author who answered something about one of its turns
    reviewers = (
        select(ChatMessage.chat_id, func.count(func.distinct(ChatAnnotation.participant_id)).label("n"))
        .join(ChatAnnotation, col(ChatAnnotation.message_id) == ChatMessage.id)
        .join(Chat, col(Chat.id) == ChatMessage.chat_id)
        .where(Chat.study_id == study_id, col(ChatAnnotation.participant_id) != col(Chat.participant_id))
        .group_by(col(ChatMessage.chat_id))
        .subquery()
    )
    mine = (
        select(ChatMessage.chat_id)
        .join(ChatAnnotation, col(ChatAnnotation.message_id) == ChatMessage.id)
        .where(ChatAnnotation.participant_id == reviewer.id)
    )
    candidates = session.exec(
        select(Chat.id, func.coalesce(reviewers.c.n, 0))
        .outerjoin(reviewers, reviewers.c.chat_id == Chat.id)
        .where(
            Chat.study_id == study_id,
            Chat.status == "finished",
            col(Chat.participant_id).is_not(None),
            col(Chat.participant_id) != reviewer.id,
            col(Chat.id).not_in(mine),
        )
        .order_by(func.coalesce(reviewers.c.n, 0), col(Chat.id))
    ).all()
    if not candidates:
        reason = "no other participant's finished conversation is left to review"
        return {"conversation_id": None, "reason": reason, "remaining": 0}
    chat_id, count = candidates[0]
    return {
        "conversation_id": chat_id,
        "reviews": int(count),
        "remaining": len(candidates),
        "page_url": f"/studies/{study_id}/conversations/{chat_id}",
    }
