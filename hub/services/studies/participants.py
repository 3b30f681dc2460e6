"""Who takes part in a study: invite links (personal or cohort, capped per link and per study, as the human
evaluation's), participants (raters of backend "study", so exports carry the same salted hash), the participant a
browser session holds, and who may see which conversation (participants their own, admins all)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import Chat, Rater, Study, StudyInvite, StudyParticipant, User
from hub.models.common import utcnow
from hub.services.accounts import rate_limits
from hub.services.human.raters import client_hash, public_hash
from hub.services.platform import audit
from hub.services.studies import arms
from hub.settings import get_settings

INVITE_PREFIX = "csi_"
BACKEND = "study"
SESSION_KEY = "study_participants"  # request.session[SESSION_KEY] = {str(study id): participant id}
BROWSER_KEY = "study_browsers"  # {str(invite id): random browser label} for cohort invites
MAX_MAX_PARTICIPANTS = 100_000


@dataclass(frozen=True)
class Viewer:
    """Who is asking: a logged-in user (admins see every conversation) and/or the participants this browser is."""

    user: User | None
    participants: dict[int, int]  # study id -> participant id

    @property
    def is_admin(self) -> bool:
        return bool(self.user is not None and self.user.is_admin)

    def participant_in(self, study_id: int) -> int | None:
        return self.participants.get(study_id)


def session_participants(browser_session: dict[str, Any]) -> dict[int, int]:
    """The participants a browser session holds (malformed entries ignored)."""
    known = browser_session.get(SESSION_KEY)
    result: dict[int, int] = {}
    if isinstance(known, dict):
        for study, participant in known.items():
            if isinstance(study, str) and study.isdigit() and isinstance(participant, int):
                result[int(study)] = participant
    return result


def remember(browser_session: dict[str, Any], participant: StudyParticipant) -> None:
    """Keep `participant` in the browser session (the signed cookie), one per study."""
    known = dict(browser_session.get(SESSION_KEY) or {})
    known[str(participant.study_id)] = participant.id
    browser_session[SESSION_KEY] = known


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_invite(
    session: Session,
    admin: User | None,
    study: Study,
    *,
    label: str = "",
    cohort: bool = True,
    max_participants: int = 50,
) -> tuple[StudyInvite, str]:
    """A new invite link token (shown once; only its hash is stored)."""
    if admin is None or not admin.is_admin:
        raise Forbidden("only admins invite participants")
    if not 1 <= max_participants <= MAX_MAX_PARTICIPANTS:
        raise UnprocessableInput(
            f"an invite takes 1 to {MAX_MAX_PARTICIPANTS:,} participants", field="max_participants"
        )
    token = INVITE_PREFIX + secrets.token_urlsafe(24)
    invite = StudyInvite(
        study_id=study.id or 0,
        token_sha256=token_sha256(token),
        label=label.strip()[:200],
        cohort=cohort,
        max_participants=max_participants if cohort else 1,
    )
    session.add(invite)
    session.commit()
    session.refresh(invite)
    detail = {"invite": invite.id, "cohort": cohort, "label": invite.label, "max_participants": max_participants}
    audit.record(session, actor=admin, action="create_study_invite", target=f"study #{study.id}", detail=detail)
    return invite, token


def invite_url(token: str) -> str:
    return f"{get_settings().public_url.rstrip('/')}/studies/join/{token}"


def invite_json(invite: StudyInvite) -> dict[str, Any]:
    return {
        "id": invite.id,
        "study_id": invite.study_id,
        "label": invite.label,
        "cohort": invite.cohort,
        "max_participants": invite.max_participants,
        "participant_count": invite.participant_count,
        "revoked": invite.revoked_at is not None,
        "created_at": invite.created_at.isoformat(),
    }


def list_invites(session: Session, study: Study) -> list[StudyInvite]:
    return list(session.exec(select(StudyInvite).where(StudyInvite.study_id == study.id).order_by(col(StudyInvite.id))))


def revoke_invite(session: Session, admin: User | None, study: Study, invite_id: int) -> StudyInvite:
    if admin is None or not admin.is_admin:
        raise Forbidden("only admins revoke invites")
    invite = session.get(StudyInvite, invite_id)
    if invite is None or invite.study_id != study.id:
        raise NotFound(f"no invite #{invite_id} in study #{study.id}", field="invite_id")
    if invite.revoked_at is None:
        invite.revoked_at = utcnow()
        session.add(invite)
        session.commit()
        audit.record(session, actor=admin, action="revoke_study_invite", target=f"study invite #{invite_id}")
    return invite


def invite_for_token(session: Session, token: str) -> tuple[StudyInvite, Study]:
    """The live invite and its open study; 404 alike for a mistyped, revoked or closed one."""
    invite = None
    if isinstance(token, str) and 0 < len(token) <= 100:
        invite = session.exec(select(StudyInvite).where(StudyInvite.token_sha256 == token_sha256(token))).first()
    study = session.get(Study, invite.study_id) if invite is not None else None
    if invite is None or invite.revoked_at is not None or study is None or study.status != "open":
        raise NotFound("this invite link is not valid (mistyped, revoked, or the study is not open)", field="token")
    return invite, study


def join(
    session: Session, browser_session: dict[str, Any], token: str, *, client: str
) -> tuple[StudyParticipant, Study]:
    """Join the study of invite `token` as this browser: the participant it already is in that study comes back;
    otherwise a new one takes a place of the invite and of the study (409 when either is full) and is remembered
    in `browser_session`."""
    invite, study = invite_for_token(session, token)
    assert invite.id is not None and study.id is not None
    known = session_participants(browser_session).get(study.id)
    if known is not None:
        existing = session.get(StudyParticipant, known)
        if existing is not None and existing.study_id == study.id:
            return existing, study
    browsers = dict(browser_session.get(BROWSER_KEY) or {})
    browser = browsers.get(str(invite.id))
    if not isinstance(browser, str) or not browser:
        browser = secrets.token_hex(8)
    external_id = f"study-invite:{invite.id}" + (f":{browser}" if invite.cohort else "")
    rater = session.exec(select(Rater).where(Rater.backend == BACKEND, Rater.external_id == external_id)).first()
    participant = None
    if rater is not None:
        participant = session.exec(
            select(StudyParticipant).where(StudyParticipant.study_id == study.id, StudyParticipant.rater_id == rater.id)
        ).first()
    if participant is None:
        if rater is None:
            session.rollback()
            rate_limits.take(rate_limits.RATER_CLIENT, client)
        participant = _new_participant(session, invite, study, external_id, rater, client)
    browsers[str(invite.id)] = browser
    browser_session[BROWSER_KEY] = browsers
    remember(browser_session, participant)
    return participant, study


def _take(session: Session, table: Any, row_id: int, count: Any, cap: Any, message: str) -> None:
    """One conditional UPDATE, so concurrent joins never take more places than the cap on either database."""
    taken = session.exec(  # type: ignore[call-overload]
        update(table).where(col(table.id) == row_id, col(count) < col(cap)).values({count.key: col(count) + 1})
    ).rowcount
    if not taken:
        session.rollback()
        raise Conflict(message)


def _new_participant(
    session: Session, invite: StudyInvite, study: Study, external_id: str, rater: Rater | None, client: str
) -> StudyParticipant:
    full = "this study already has all the participants it may have; ask the organisers"
    _take(session, Study, study.id or 0, Study.participant_count, Study.max_participants, full)
    if invite.cohort:
        link_full = f"this invite link already has all the {invite.max_participants} participants it may have"
        _take(
            session, StudyInvite, invite.id or 0, StudyInvite.participant_count, StudyInvite.max_participants, link_full
        )
    if rater is None:
        rater = Rater(
            backend=BACKEND,
            external_id=external_id,
            public_hash=public_hash(BACKEND, external_id),
            client_hash=client_hash(client),
        )
        session.add(rater)
        session.flush()
    arm = arms.participant_arm(session, study)
    participant = StudyParticipant(study_id=study.id or 0, rater_id=rater.id or 0, invite_id=invite.id, arm=arm)
    session.add(participant)
    try:
        session.commit()  # the places and the participant together, or nothing
    except IntegrityError:  # a racing request from the same browser made it first
        session.rollback()
        return session.exec(
            select(StudyParticipant)
            .join(Rater, col(Rater.id) == col(StudyParticipant.rater_id))
            .where(StudyParticipant.study_id == study.id, Rater.external_id == external_id)
        ).one()
    session.refresh(participant)
    return participant


def participant_json(participant: StudyParticipant) -> dict[str, Any]:
    return {
        "id": participant.id,
        "study_id": participant.study_id,
        "arm": participant.arm,
        "joined_at": participant.joined_at.isoformat(),
    }


def participant_for(session: Session, viewer: Viewer, study_id: int) -> StudyParticipant | None:
    """The participant this browser is in `study_id`, or None."""
    participant_id = viewer.participant_in(study_id)
    if participant_id is None:
        return None
    participant = session.get(StudyParticipant, participant_id)
    return participant if participant is not None and participant.study_id == study_id else None


def readable_chat(session: Session, viewer: Viewer, chat_id: int, *, field: str = "conversation_id") -> Chat:
    """The conversation if this viewer may see it (its participant, or an admin); 404 alike otherwise, so a
    conversation's existence never leaks."""
    chat = session.get(Chat, chat_id)
    if chat is not None and may_read(viewer, chat):
        return chat
    raise NotFound(f"no conversation #{chat_id}", field=field)


def may_read(viewer: Viewer, chat: Chat) -> bool:
    if viewer.is_admin:
        return True
    if chat.participant_id is not None:
        return viewer.participant_in(chat.study_id) == chat.participant_id
    return viewer.user is not None and chat.created_by_id == viewer.user.id
