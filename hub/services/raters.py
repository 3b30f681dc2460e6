"""Raters: who they are (a private external id, a public salted hash), invite links, and exclusion.

The public hash is an HMAC of the backend and external id under the hub's secret key, so the same worker has the
same hash in every export, and nobody without the key can recover or test a worker id from it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from hub.errors import Forbidden, NotFound, UnprocessableInput
from hub.models import Experiment, Rater, RaterInvite, User
from hub.models.common import utcnow
from hub.services import audit
from hub.settings import get_settings

INVITE_PREFIX = "cei_"


def public_hash(backend: str, external_id: str) -> str:
    key = get_settings().secret_key.encode()
    return hmac.new(key, f"rater:{backend}:{external_id}".encode(), hashlib.sha256).hexdigest()[:16]


def rater_for(session: Session, backend: str, external_id: str) -> Rater:
    """The rater with this identity, created on first sight (two racing first requests create one row)."""
    query = select(Rater).where(Rater.backend == backend, Rater.external_id == external_id)
    rater = session.exec(query).first()
    if rater is not None:
        return rater
    rater = Rater(backend=backend, external_id=external_id, public_hash=public_hash(backend, external_id))
    session.add(rater)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return session.exec(query).one()
    session.refresh(rater)
    return rater


def _token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_invite(
    session: Session, admin: User, experiment: Experiment, *, label: str = "", cohort: bool = False
) -> tuple[RaterInvite, str]:
    """A new invite link token (shown once; only its hash is stored)."""
    if not admin.is_admin:
        raise Forbidden("only admins invite raters")
    token = INVITE_PREFIX + secrets.token_urlsafe(24)
    invite = RaterInvite(
        experiment_id=experiment.id, token_sha256=_token_sha256(token), label=label.strip()[:200], cohort=cohort
    )
    session.add(invite)
    session.commit()
    audit.record(
        session,
        actor=admin,
        action="create_invite",
        target=f"experiment #{experiment.id}",
        detail={"invite": invite.id, "cohort": cohort, "label": invite.label},
    )
    session.refresh(invite)
    return invite, token


def invite_for_token(session: Session, token: str) -> RaterInvite:
    invite = session.exec(select(RaterInvite).where(RaterInvite.token_sha256 == _token_sha256(token))).first()
    if invite is None or invite.revoked_at is not None:
        raise NotFound("this invite link is not valid (mistyped, or revoked by the organisers)")
    return invite


def revoke_invite(session: Session, admin: User, experiment_id: int, invite_id: int) -> RaterInvite:
    """Stop an invite link from working (ratings already made with it stay). Idempotent."""
    if not admin.is_admin:
        raise Forbidden("only admins revoke invites")
    invite = session.get(RaterInvite, invite_id)
    if invite is None or invite.experiment_id != experiment_id:
        raise NotFound(f"no invite #{invite_id} in experiment #{experiment_id}")
    if invite.revoked_at is None:
        invite.revoked_at = utcnow()
        session.add(invite)
        session.commit()
        audit.record(session, actor=admin, action="revoke_invite", target=f"invite #{invite_id}")
    return invite


def invite_url(token: str) -> str:
    """Where a rater opens an invite: the hub's public address plus the token."""
    return f"{get_settings().public_url.rstrip('/')}/rate/{token}"


Block = Callable[[Rater, str], None]


def set_excluded(
    session: Session, admin: User, rater_id: int, *, excluded: bool, reason: str = "", block: Block | None = None
) -> Rater:
    """Exclude a rater's judgements from results (or include them again). Nothing is deleted: ratings keep a flag.

    `block(rater, reason)` also blocks the worker on the crowd platform (Mechanical Turk)."""
    if not admin.is_admin:
        raise Forbidden("only admins exclude raters")
    rater = session.get(Rater, rater_id)
    if rater is None:
        raise NotFound(f"no rater #{rater_id}")
    reason = reason.strip()
    if excluded and not reason:
        raise UnprocessableInput("give a reason for the exclusion (it is published with the ratings)", field="reason")
    if excluded:
        rater.excluded, rater.exclusion_reason, rater.excluded_at = True, reason[:2_000], utcnow()
        if block is not None and not rater.blocked:
            block(rater, reason)
            rater.blocked = True
    else:
        rater.excluded, rater.exclusion_reason, rater.excluded_at = False, None, None
    session.add(rater)
    session.commit()
    audit.record(
        session,
        actor=admin,
        action="exclude_rater" if excluded else "include_rater",
        target=f"rater {rater.public_hash}",
        detail={"rater": rater.id, "reason": reason, "blocked": rater.blocked},
    )
    session.refresh(rater)
    return rater
