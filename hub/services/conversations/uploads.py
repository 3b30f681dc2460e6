"""Uploading a conversation set: the file checked whole with the toolkit's reader (the same refusals as `chateval
evaluate --conversations`, naming the line) before anything is stored; then the file, the row and the job.

Visibility: the owner and admins see a set at once; everyone else only when the owner asked for it to be public
and an admin approved it. Evaluation does not wait for review (function metrics cost nothing to run)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from evaluation.function_metrics.conversations import parse_conversations
from hub.errors import BadRequest, Conflict, Forbidden, NotFound, QueueUnavailable, UnprocessableInput
from hub.models import ConversationSet, User
from hub.models.common import utcnow
from hub.queue import EVALUATE_CONVERSATION_SET, enqueue
from hub.services.platform import audit
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions import quotas
from hub.services.submissions.submissions import UploadedFile, _validated
from hub.storage import Storage
from hub.system_names import MAX_DESCRIPTION_CHARS, RefusedText, check_name, check_text

log = logging.getLogger(__name__)
FILE_FIELD = "conversations"
MAX_FILENAME_CHARS = 255
MAX_DATASET_CHARS = 120
# A queued set older than this has probably lost its job (the queue was down when it was made): the sweep resends it.
RESEND_AFTER = timedelta(seconds=60)


@dataclass
class SetForm:
    name: str
    description: str = ""
    is_public: bool = False
    dataset: str | None = None  # its attached rubrics also grade the assistant turns (LLM judges)


def check_form(form: SetForm) -> SetForm:
    try:
        form.name = check_name(form.name)
    except RefusedText as exc:
        raise UnprocessableInput(str(exc).replace("system name", "name"), field="name") from exc
    try:
        check_text(form.description, label="description", max_chars=MAX_DESCRIPTION_CHARS)
    except RefusedText as exc:
        raise UnprocessableInput(str(exc), field="description") from exc
    if form.dataset:
        if len(form.dataset) > MAX_DATASET_CHARS:
            raise UnprocessableInput(f"dataset must be at most {MAX_DATASET_CHARS} characters", field="dataset")
        try:
            installed_dataset(form.dataset)
        except NotFound as exc:
            raise BadRequest(f"unknown dataset {form.dataset!r}", field="dataset") from exc
    return form


def create_set(session: Session, storage: Storage, *, owner: User, form: SetForm, upload: UploadedFile | None):
    """Check the form and the whole file, store the file, record the set and queue its evaluation (after the
    commit; a queue that is down leaves the set queued for the sweep). Nothing is stored unless everything passed.
    A valid set counts toward the owner's daily submission quota like a response file (hub.services.submissions.
    quotas; the route counts the attempt)."""
    check_form(form)
    if upload is None or not upload.data:
        raise BadRequest('upload a conversations file (JSONL, one {"messages": [...]} per line)', field=FILE_FIELD)
    filename = upload.filename[:MAX_FILENAME_CHARS]
    counted: list[int] = []
    # The evaluation reader's own checks and messages ("mine.jsonl, line 3: message 2 has unknown role ...").
    _validated(upload, FILE_FIELD, lambda data, name: counted.append(len(parse_conversations(data, name=name))))
    duplicate = session.exec(
        select(ConversationSet).where(
            ConversationSet.owner_id == owner.id,
            ConversationSet.file_sha256 == storage_key(upload.data),
            col(ConversationSet.status) != "failed",
        )
    ).first()
    if duplicate is not None:
        raise Conflict(f"{filename} was already uploaded as conversation set #{duplicate.id}", field=FILE_FIELD)
    assert owner.id is not None
    quotas.check(session, owner, 1)  # a valid set uses one of the day's submissions (429 with the reset time)
    sha256 = storage.put(upload.data)  # first: if the storage is down (503), no row has been written
    quotas.reserve(session, owner, 1)  # again under a lock on the owner, held until the commit below
    conversation_set = ConversationSet(
        owner_id=owner.id,
        name=form.name,
        description=form.description,
        is_public=form.is_public,
        dataset_name=form.dataset or None,
        filename=filename,
        file_sha256=sha256,
        conversations=counted[0],
    )
    session.add(conversation_set)
    session.commit()
    session.refresh(conversation_set)
    send(conversation_set.id)
    return conversation_set


def storage_key(data: bytes) -> str:
    """The file's sha256, as the storage names it."""
    return hashlib.sha256(data).hexdigest()


def send(set_id: int | None) -> bool:
    """Queue the evaluation by name; False (logged) when the queue is down: the sweep sends it later."""
    assert set_id is not None
    try:
        enqueue(EVALUATE_CONVERSATION_SET, set_id)
    except QueueUnavailable:
        log.warning("conversation set %s: queue unavailable, the sweep will send its evaluation", set_id)
        return False
    return True


def resend_queued(engine: Engine) -> list[int]:
    """The sweep's part: resend the evaluation of sets still queued after RESEND_AFTER (their job was lost or never
    sent). A set's job claims it with a conditional update, so a second job for it does nothing."""
    cutoff = utcnow() - RESEND_AFTER
    with Session(engine) as session:
        stale = session.exec(
            select(ConversationSet.id).where(ConversationSet.status == "queued", ConversationSet.updated_at <= cutoff)
        ).all()
        sent = []
        for set_id in stale:
            session.execute(
                update(ConversationSet).where(col(ConversationSet.id) == set_id).values(updated_at=utcnow())
            )
            session.commit()
            if not send(set_id):
                break
            sent.append(set_id)
    return [s for s in sent if s is not None]


# ---- who sees a set, and an admin's review ----


def can_view(conversation_set: ConversationSet, viewer: User | None) -> bool:
    if viewer is not None and (viewer.is_admin or viewer.id == conversation_set.owner_id):
        return True
    return conversation_set.is_public and conversation_set.review == "approved"


def is_private_view(conversation_set: ConversationSet, viewer: User | None) -> bool:
    """Owner or admin: sees errors, the review state and the file name."""
    return viewer is not None and (viewer.is_admin or viewer.id == conversation_set.owner_id)


def get_visible(session: Session, set_id: int, viewer: User | None) -> ConversationSet:
    """The set if the viewer may see it; otherwise 404 exactly as for an id that does not exist."""
    conversation_set = session.get(ConversationSet, set_id)
    if conversation_set is None or not can_view(conversation_set, viewer):
        raise NotFound(f"no conversation set #{set_id}")
    return conversation_set


def visible_sets(session: Session, viewer: User | None) -> list[ConversationSet]:
    """Newest first: the public approved sets, plus the viewer's own (every set, for admins)."""
    query = select(ConversationSet).order_by(col(ConversationSet.id).desc())
    if viewer is None or not viewer.is_admin:
        public = col(ConversationSet.is_public) & (col(ConversationSet.review) == "approved")
        query = query.where(public | (col(ConversationSet.owner_id) == viewer.id) if viewer else public)
    return list(session.exec(query.limit(1_000)))


def _admin_set(session: Session, admin: User, set_id: int) -> ConversationSet:
    if not admin.is_admin:
        raise Forbidden("only admins can review conversation sets")
    conversation_set = session.get(ConversationSet, set_id)
    if conversation_set is None:
        raise NotFound(f"no conversation set #{set_id}")
    return conversation_set


def review(session: Session, admin: User, set_id: int, *, approve: bool, reason: str = "") -> ConversationSet:
    """Approve (a public set becomes visible to everyone) or reject with a reason (it stays with its owner). Audited."""
    conversation_set = _admin_set(session, admin, set_id)
    if conversation_set.review != "pending":
        raise Conflict(f"conversation set #{set_id} is {conversation_set.review}, not waiting for review")
    reason = reason.strip()
    if not approve and not reason:
        raise BadRequest("give the researcher a reason for the rejection", field="reason")
    conversation_set.review = "approved" if approve else "rejected"
    conversation_set.review_reason = reason[:5_000] or None
    conversation_set.updated_at = utcnow()
    session.add(conversation_set)
    session.commit()
    audit.record(
        session,
        actor=admin,
        action="approve_conversation_set" if approve else "reject_conversation_set",
        target=f"conversation set #{set_id}",
        detail={"to": conversation_set.review, "reason": conversation_set.review_reason},
    )
    session.refresh(conversation_set)
    return conversation_set


def rerun(session: Session, admin: User, set_id: int) -> ConversationSet:
    """Evaluate again (after a failure, a lost worker or new metrics): back to queued; results replaced when done."""
    conversation_set = _admin_set(session, admin, set_id)
    if conversation_set.status == "queued":
        raise Conflict(f"conversation set #{set_id} is already queued")
    conversation_set.status, conversation_set.error, conversation_set.updated_at = "queued", None, utcnow()
    session.add(conversation_set)
    session.commit()
    audit.record(session, actor=admin, action="rerun_conversation_set", target=f"conversation set #{set_id}")
    session.refresh(conversation_set)
    send(conversation_set.id)
    return conversation_set
