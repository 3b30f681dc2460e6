"""Responses an admin attaches to an existing system (e.g. one imported with the original ChatEval's votes), so
its automatic scores join its human and IRT results instead of a second, unrelated system of the same name."""

from __future__ import annotations

from functools import partial

from sqlmodel import Session, col, select

from evaluation.responses import detect_format, parse_responses
from hub.errors import Forbidden, NotFound
from hub.models import OutboxJob, Submission, SubmissionStatus, System, User
from hub.queue import EVALUATE_SUBMISSION
from hub.services.platform import audit, outbox
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions.submissions import UploadedFile, _validated
from hub.storage import Storage

REPLACED = (SubmissionStatus.rejected, SubmissionStatus.withdrawn, SubmissionStatus.failed)


def attach_responses(
    session: Session,
    storage: Storage,
    *,
    actor: User | None,
    system_id: int,
    dataset_name: str,
    upload: UploadedFile,
    allow_empty: bool = False,
) -> tuple[Submission, OutboxJob | None]:
    """An approved submission of `system_id` on the dataset with these responses, and its evaluation job (None
    when the same file is already attached: attaching again adds nothing). `actor` None is the command line;
    through the API only admins attach. The file is checked whole first (422 naming the line, field responses)."""
    if actor is not None and not actor.is_admin:
        raise Forbidden("only admins can attach responses to a system")
    system = session.get(System, system_id)
    if system is None:
        raise NotFound(f"no system #{system_id}")
    dataset = installed_dataset(dataset_name)
    check = partial(parse_responses, dataset=dataset, allow_empty=allow_empty)
    _validated(upload, "responses", lambda data, name: check(data, name=name))
    sha256 = storage.put(upload.data)
    same = select(Submission).where(
        Submission.system_id == system.id,
        Submission.dataset_name == dataset.name,
        Submission.dataset_fingerprint == dataset.fingerprint,
        Submission.responses_sha256 == sha256,
        col(Submission.status).not_in(REPLACED),
    )
    existing = session.exec(same).first()
    if existing is not None:
        return existing, None
    submission = Submission(
        system_id=system.id,
        owner_id=system.owner_id,
        dataset_name=dataset.name,
        dataset_fingerprint=dataset.fingerprint,
        responses_sha256=sha256,
        responses_format=detect_format(upload.filename, "auto"),
        status=SubmissionStatus.approved,
    )
    session.add(submission)
    session.flush()
    job = outbox.add(session, EVALUATE_SUBMISSION, submission.id)
    session.commit()
    audit.record(
        session,
        actor=actor,
        action="attach_responses",
        target=f"system #{system.id}",
        detail={"submission": submission.id, "dataset": dataset.name, "responses_sha256": sha256},
    )
    session.refresh(submission)
    return submission, job
