"""Which MILO arm (unassisted, assisted, realtime) a participant or a conversation is in: block-randomised from the
study's recorded seed and the unit's enrolment position (evaluation.randomisation), so that anyone holding the seed
recomputes every assignment. Studies without assistance have no arms (None)."""

from __future__ import annotations

from sqlmodel import Session, col, func, select

from evaluation.randomisation import assign_arm
from hub.models import Chat, Study, StudyParticipant


def _randomised(study: Study, unit: str) -> bool:
    settings = study.assistance or {}
    return settings.get("mode", "none") != "none" and settings.get("randomise", "participant") == unit


def _draw(study: Study, position: int) -> str:
    settings = study.assistance
    return assign_arm(int(settings.get("seed", 0)), position, list(settings.get("arms") or ["unassisted", "assisted"]))


def participant_arm(session: Session, study: Study) -> str | None:
    """The arm of the participant who just took a place of `study` (its enrolment position is the study's
    participant count, read in the same transaction as the place was taken)."""
    if not _randomised(study, "participant"):
        return None
    count = session.exec(select(Study.participant_count).where(Study.id == study.id)).one()
    return _draw(study, count - 1)


def chat_arm(session: Session, study: Study, chat: Chat, participant: StudyParticipant | None) -> str | None:
    """A conversation's arm: drawn for it (position = the study's conversations before it) when the study
    randomises conversations, else its participant's."""
    if _randomised(study, "conversation"):
        before = session.exec(select(func.count()).where(Chat.study_id == study.id, col(Chat.id) < chat.id)).one()
        return _draw(study, before)
    return participant.arm if participant is not None else None
