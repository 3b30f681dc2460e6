"""Raters: who they are (a private external id, a public salted hash), invite links, and exclusion.

The public hash is an HMAC of the backend and external id under the hub's secret key, so the same worker has the
same hash in every export, and nobody without the key can recover or test a worker id from it. Raters made through
an invite also keep the invite and an HMAC of the creating client's address, so that a cohort link's cap holds and
raters created in a burst from one client show up in the screening.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.errors import Conflict, Forbidden, NotFound, UnprocessableInput
from hub.models import Experiment, Rater, RaterInvite, User
from hub.models.common import utcnow
from hub.services.accounts import rate_limits
from hub.services.platform import audit
from hub.settings import get_settings

INVITE_PREFIX = "cei_"
DEFAULT_MAX_RATERS, MAX_MAX_RATERS = 50, 100_000
BURST_WINDOW = timedelta(minutes=1)


def public_hash(backend: str, external_id: str) -> str:
    key = get_settings().secret_key.encode()
    return hmac.new(key, f"rater:{backend}:{external_id}".encode(), hashlib.sha256).hexdigest()[:16]


def client_hash(address: str) -> str:
    """An HMAC of a client address: equal for raters from one address, meaningless without the secret key."""
    key = get_settings().secret_key.encode()
    return hmac.new(key, f"client:{address}".encode(), hashlib.sha256).hexdigest()[:16]


def rater_for(session: Session, backend: str, external_id: str, **fields: Any) -> Rater:
    """The rater with this identity, created on first sight (two racing first requests create one row).
    `fields` (invite_id, client_hash) are set on a new rater only."""
    query = select(Rater).where(Rater.backend == backend, Rater.external_id == external_id)
    rater = session.exec(query).first()
    if rater is not None:
        return rater
    rater = Rater(backend=backend, external_id=external_id, public_hash=public_hash(backend, external_id), **fields)
    session.add(rater)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return session.exec(query).one()
    session.refresh(rater)
    return rater


def invite_rater(session: Session, invite: RaterInvite, *, client: str, label: str | None = None) -> Rater:
    """The rater of a personal invite, or of a cohort invite the rater named `label` (a browser's random id or an
    API caller's label). A new cohort rater counts against the client's limit on new raters (TooManyRequests) and
    takes one of the invite's `max_raters` places (Conflict when none is left); existing raters always come back."""
    fields = {"invite_id": invite.id, "client_hash": client_hash(client)}
    if not invite.cohort:
        return rater_for(session, "hub", f"invite:{invite.id}", **fields)
    external_id = f"invite:{invite.id}:{(label or '')[:100]}"
    query = select(Rater).where(Rater.backend == "hub", Rater.external_id == external_id)
    existing = session.exec(query).first()
    if existing is not None:
        return existing
    session.rollback()  # no connection held while the limiter's store is asked (a file or a remote Redis)
    rate_limits.take(rate_limits.RATER_CLIENT, client)
    _take_place(session, invite)
    rater = Rater(backend="hub", external_id=external_id, public_hash=public_hash("hub", external_id), **fields)
    session.add(rater)
    try:
        session.commit()
    except IntegrityError:  # a racing request created this rater first: theirs counts, ours gives its place back
        session.rollback()
        _give_back_place(session, invite)
        return session.exec(query).one()
    session.refresh(rater)
    return rater


def _take_place(session: Session, invite: RaterInvite) -> None:
    """One conditional UPDATE, so concurrent claims never take more places than the cap on either database."""
    taken = session.exec(  # type: ignore[call-overload]
        update(RaterInvite)
        .where(col(RaterInvite.id) == invite.id, col(RaterInvite.rater_count) < col(RaterInvite.max_raters))
        .values(rater_count=col(RaterInvite.rater_count) + 1)
    ).rowcount
    session.commit()
    if not taken:
        message = f"this invite link already has all the {invite.max_raters} raters it may have; ask the organisers"
        raise Conflict(message)


def _give_back_place(session: Session, invite: RaterInvite) -> None:
    session.exec(  # type: ignore[call-overload]
        update(RaterInvite)
        .where(col(RaterInvite.id) == invite.id, col(RaterInvite.rater_count) > 0)
        .values(rater_count=col(RaterInvite.rater_count) - 1)
    )
    session.commit()


def came_through(rater: Rater, invite: RaterInvite) -> bool:
    """Whether `rater` was made by `invite` (raters from before invite_id was kept: by their external id)."""
    if rater.invite_id is not None:
        return rater.invite_id == invite.id
    prefix = f"invite:{invite.id}"
    return rater.backend == "hub" and (rater.external_id == prefix or rater.external_id.startswith(prefix + ":"))


def client_bursts(session: Session, public_hashes: Iterable[str]) -> dict[str, int]:
    """For each rater (by public hash): how many raters the same client created within BURST_WINDOW of it,
    itself included (1 when the client is not known)."""
    raters = session.exec(select(Rater).where(col(Rater.public_hash).in_(list(public_hashes)))).all()
    clients = {r.client_hash for r in raters if r.client_hash}
    times: dict[str, list] = defaultdict(list)
    if clients:
        query = select(Rater.client_hash, Rater.created_at).where(col(Rater.client_hash).in_(clients))
        for client, created in session.exec(query):
            times[client].append(created)
    for created in times.values():
        created.sort()
    bursts = {}
    for rater in raters:
        created = times.get(rater.client_hash or "", [])
        low = bisect_left(created, rater.created_at - BURST_WINDOW)
        high = bisect_right(created, rater.created_at + BURST_WINDOW)
        bursts[rater.public_hash] = max(1, high - low)
    return bursts


def with_client_bursts(session: Session, screening: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The screening rows (RaterQuality dicts) with `client_burst`, the hub's count of each rater's burst
    (`evaluation.rater_quality.with_client_bursts` flags it)."""
    from evaluation.rater_quality import with_client_bursts as flag_bursts

    return flag_bursts(screening, client_bursts(session, [q["rater"] for q in screening]))


def _token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_invite(
    session: Session,
    admin: User,
    experiment: Experiment,
    *,
    label: str = "",
    cohort: bool = False,
    max_raters: int = DEFAULT_MAX_RATERS,
) -> tuple[RaterInvite, str]:
    """A new invite link token (shown once; only its hash is stored). A cohort link creates at most `max_raters`."""
    if not admin.is_admin:
        raise Forbidden("only admins invite raters")
    if not 1 <= max_raters <= MAX_MAX_RATERS:
        raise UnprocessableInput(f"a cohort link takes 1 to {MAX_MAX_RATERS:,} raters", field="max_raters")
    token = INVITE_PREFIX + secrets.token_urlsafe(24)
    invite = RaterInvite(
        experiment_id=experiment.id,
        token_sha256=_token_sha256(token),
        label=label.strip()[:200],
        cohort=cohort,
        max_raters=max_raters,
    )
    session.add(invite)
    session.commit()
    audit.record(
        session,
        actor=admin,
        action="create_invite",
        target=f"experiment #{experiment.id}",
        detail={"invite": invite.id, "cohort": cohort, "label": invite.label, "max_raters": max_raters},
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
    rater.reviewed_at = utcnow()  # the decision: judgements the screening held out are now counted (or excluded)
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
