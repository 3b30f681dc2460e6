"""The public queue: what waits for review, waits for evaluation, is being evaluated, finished today or failed today.

Everyone sees every count. A submission the viewer may not open (`can_view`: a private system, or one not yet
approved) is only counted, never named: no system, no owner, no id. Owners are never shown. A failure's or
rejection's reason is shown to the submission's owner and to admins only. Each of the viewer's own submissions is
listed with its position in its line (1 = next)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, col, or_, select

from hub.models import Submission, SubmissionStatus, System, User
from hub.services.notifications.status_words import submission_words
from hub.services.submissions.quotas import day_start
from hub.services.submissions.submissions import can_view

MAX_LISTED = 100  # named entries per section (every submission is still counted)
DONE = (SubmissionStatus.evaluated, SubmissionStatus.human_evaluation, SubmissionStatus.complete)
FAILED = (SubmissionStatus.failed, SubmissionStatus.rejected)


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    explains: str
    statuses: tuple[SubmissionStatus, ...]
    today_only: bool = False
    ordered: bool = False  # a line with positions


SECTIONS = (
    Section(
        "waiting_review",
        "Waiting for review",
        "Files passed validation; an admin approves or rejects them, oldest first.",
        (SubmissionStatus.submitted,),
        ordered=True,
    ),
    Section(
        "waiting_evaluation",
        "Waiting for evaluation",
        "Approved; a worker computes the automatic metrics, in order of approval.",
        (SubmissionStatus.approved,),
        ordered=True,
    ),
    Section(
        "evaluating", "Evaluating", "A worker is computing the automatic metrics now.", (SubmissionStatus.evaluating,)
    ),
    Section("done_today", "Done today (UTC)", "Scores saved since 00:00 UTC.", DONE, today_only=True),
    Section(
        "failed_today",
        "Failed or rejected today (UTC)",
        "The reason is shown to its owner and to admins only.",
        FAILED,
        True,
    ),
)


def _order_key(section: Section, submission: Submission) -> tuple[datetime, int]:
    # Review takes the oldest upload first; evaluation runs in order of approval (the row's last change).
    when = submission.created_at if section.key == "waiting_review" else submission.updated_at
    return (when, submission.id or 0)


def _entry(
    section: Section, submission: Submission, system: System, viewer: User | None, position: int | None
) -> dict[str, Any]:
    mine = viewer is not None and submission.owner_id == viewer.id
    private = mine or (viewer is not None and viewer.is_admin)
    entry: dict[str, Any] = {
        "id": submission.id,
        "system": {"id": system.id, "name": system.name},
        "dataset": submission.dataset_name,
        "status": submission.status,
        "status_words": submission_words(submission.status).as_dict(),
        "submitted_at": submission.created_at.isoformat(),
        "updated_at": submission.updated_at.isoformat(),
        "mine": mine,
    }
    if position is not None:
        entry["position"] = position
    if section.key == "evaluating":
        entry["progress"] = round(max(0.0, min(1.0, submission.progress)), 3)
    if section.key == "failed_today":
        reason = submission.error if submission.status == SubmissionStatus.failed else submission.review_reason
        entry["reason"] = (reason or "")[:2_000] if private else None
    return entry


def public_queue(session: Session, viewer: User | None, now: datetime | None = None) -> dict[str, Any]:
    """The queue as `viewer` (None: a visitor) may see it; JSON-ready."""
    now = now or datetime.now(UTC)
    today = day_start(now)
    live = [s for section in SECTIONS if not section.today_only for s in section.statuses]
    finished = [s for section in SECTIONS if section.today_only for s in section.statuses]
    query = (
        select(Submission, System)
        .join(System, col(System.id) == Submission.system_id)
        .where(
            or_(
                col(Submission.status).in_(live),
                col(Submission.status).in_(finished) & (col(Submission.updated_at) >= today),
            )
        )
    )
    rows = session.exec(query).all()
    sections = []
    mine: list[dict[str, Any]] = []
    for section in SECTIONS:
        members = sorted(
            ((s, system) for s, system in rows if s.status in section.statuses),
            key=lambda pair: _order_key(section, pair[0]),
            reverse=not section.ordered,  # lines oldest first; finished ones newest first
        )
        listed: list[dict[str, Any]] = []
        hidden = 0
        for index, (submission, system) in enumerate(members, start=1):
            position = index if section.ordered else None
            if not can_view(submission, system, viewer):
                hidden += 1
                continue
            entry = _entry(section, submission, system, viewer, position)
            if entry["mine"]:
                mine.append({**entry, "section": section.key, "section_title": section.title, "of": len(members)})
            if len(listed) < MAX_LISTED:
                listed.append(entry)
        sections.append(
            {
                "key": section.key,
                "title": section.title,
                "explains": section.explains,
                "count": len(members),
                "anonymous": hidden,
                "listed": listed,
                "more": len(members) - hidden - len(listed),
            }
        )
    return {
        "as_of": now.isoformat().replace("+00:00", "Z"),
        "day_started_at": today.isoformat().replace("+00:00", "Z"),
        "sections": sections,
        "mine": mine,
        "note": "Submissions the viewer may not open (private systems, or not yet approved) are counted, never named.",
    }
