"""Submitting a system's response files: validate every file with the toolkit first, store, then record."""

from __future__ import annotations

import hashlib
import urllib.parse
from dataclasses import dataclass, field

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from evaluation.errors import EvaluationError
from evaluation.loglik import parse_loglik
from evaluation.responses import detect_format, parse_responses
from hub.errors import BadRequest, Conflict, NotFound, PayloadTooLarge, UnprocessableInput
from hub.models import Submission, SubmissionStatus, System, User
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions import quotas
from hub.services.submissions.public_names import refuse_public_clash
from hub.settings import get_settings
from hub.storage import Storage
from hub.system_names import MAX_DESCRIPTION_CHARS, MAX_URL_CHARS, RefusedText, check_name, check_text

# A submission in one of these states no longer blocks submitting the same file again.
FINISHED_UNSUCCESSFULLY = {SubmissionStatus.rejected, SubmissionStatus.failed, SubmissionStatus.withdrawn}


@dataclass(frozen=True)
class UploadedFile:
    filename: str
    data: bytes


@dataclass
class SystemForm:
    name: str
    description: str = ""
    paper_url: str | None = None
    code_url: str | None = None
    weights_url: str | None = None
    is_public: bool = False
    baseline_ids: list[int] = field(default_factory=list)
    allow_empty: bool = False  # blank lines in a text response file are meant as empty responses


def _check_url(name: str, value: str | None) -> str | None:
    if not value or not value.strip():
        return None
    value = value.strip()
    if len(value) > MAX_URL_CHARS:
        raise UnprocessableInput(f"{name} must be at most {MAX_URL_CHARS:,} characters", field=name)
    parsed = urllib.parse.urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or any(c.isspace() or c < " " for c in value):
        raise UnprocessableInput(f"{name} must be an http:// or https:// address", field=name)
    return value


def _check_form(session: Session, form: SystemForm) -> None:
    try:
        form.name = check_name(form.name)
    except RefusedText as exc:
        raise UnprocessableInput(str(exc), field="name") from exc
    try:
        check_text(form.description, label="description", max_chars=MAX_DESCRIPTION_CHARS)
    except RefusedText as exc:
        raise UnprocessableInput(str(exc), field="description") from exc
    for name in ("paper_url", "code_url", "weights_url"):
        setattr(form, name, _check_url(name, getattr(form, name)))
    if form.is_public:
        refuse_public_clash(session, form.name)
    for baseline_id in form.baseline_ids:
        system = session.get(System, baseline_id)
        if system is None or not system.is_baseline:
            raise BadRequest(f"baseline {baseline_id} does not exist", field="baselines")


def _validated(upload: UploadedFile, field_name: str, parse, **options) -> None:
    """Run a toolkit parser on an uploaded file, turning its error into a 422 that names the form field."""
    if len(upload.data) > get_settings().max_upload_bytes:
        raise PayloadTooLarge(
            f"{upload.filename} is {len(upload.data):,} bytes; the limit is {get_settings().max_upload_bytes:,}",
            field=field_name,
        )
    try:
        parse(upload.data, name=upload.filename, **options)
    except EvaluationError as exc:  # the toolkit's own precise message: file, line, expected vs found
        raise UnprocessableInput(exc.describe(), field=field_name) from exc


def create_submissions(
    session: Session,
    storage: Storage,
    *,
    owner: User,
    form: SystemForm,
    responses: dict[str, UploadedFile],
    logliks: dict[str, UploadedFile] | None = None,
) -> list[Submission]:
    """One system and one submission per dataset. Every file is validated before anything is stored."""
    logliks = logliks or {}
    if not responses:
        raise BadRequest("upload at least one response file", field="responses")
    _check_form(session, form)
    checked = []
    for dataset_name, upload in sorted(responses.items()):
        try:
            dataset = installed_dataset(dataset_name)
        except NotFound as exc:
            raise BadRequest(f"unknown dataset {dataset_name!r}", field=f"responses[{dataset_name}]") from exc
        fmt = detect_format(upload.filename, "auto")
        field_name = f"responses[{dataset_name}]"
        _validated(upload, field_name, parse_responses, dataset=dataset, fmt=fmt, allow_empty=form.allow_empty)
        loglik = logliks.get(dataset_name)
        if loglik is not None:
            _validated(loglik, f"loglik[{dataset_name}]", parse_loglik, dataset=dataset)
        checked.append((dataset, upload, fmt, loglik))
    unknown_logliks = sorted(set(logliks) - set(responses))
    if unknown_logliks:
        raise BadRequest(f"log-likelihood file for {unknown_logliks[0]!r} has no response file", field="loglik")
    quotas.check(session, owner, len(checked))  # valid files only count (429 with the reset time when over)

    for dataset, upload, _, _ in checked:
        _refuse_duplicate(session, owner, dataset.name, upload)
    # Files first: if the storage cannot take them (StorageUnavailable, 503), no row has been written.
    stored = {
        dataset.name: (storage.put(upload.data), storage.put(loglik.data) if loglik else None)
        for dataset, upload, _, loglik in checked
    }
    quotas.reserve(session, owner, len(checked))  # again under a lock on the owner, held until the commit
    system = System(
        name=form.name,
        description=form.description,
        paper_url=form.paper_url,
        code_url=form.code_url,
        weights_url=form.weights_url,
        owner_id=owner.id,
        is_public=form.is_public,
    )
    session.add(system)
    try:
        session.flush()
    except IntegrityError:  # a public system with a look-alike name was created meanwhile (ix_system_public_name_key)
        session.rollback()
        refuse_public_clash(session, form.name)
        raise
    submissions = []
    for dataset, _, fmt, _ in checked:
        responses_sha256, loglik_sha256 = stored[dataset.name]
        submission = Submission(
            system_id=system.id,
            owner_id=owner.id,
            dataset_name=dataset.name,
            dataset_fingerprint=dataset.fingerprint,
            responses_sha256=responses_sha256,
            responses_format=fmt,
            loglik_sha256=loglik_sha256,
            baseline_ids=list(form.baseline_ids),
        )
        session.add(submission)
        submissions.append(submission)
    try:
        session.commit()
    except IntegrityError:
        # A concurrent upload of the same file committed first (the unique index uq_submission_live_upload): the
        # same 409 as for a sequential duplicate. Any other integrity error goes on as it was.
        session.rollback()
        for dataset, upload, _, _ in checked:
            _refuse_duplicate(session, owner, dataset.name, upload)
        raise
    for submission in submissions:
        session.refresh(submission)
    return submissions


def _refuse_duplicate(session: Session, owner: User, dataset_name: str, upload: UploadedFile) -> None:
    sha256 = hashlib.sha256(upload.data).hexdigest()
    query = (
        select(Submission)
        .join(System, System.id == Submission.system_id)
        .where(
            System.owner_id == owner.id, Submission.dataset_name == dataset_name, Submission.responses_sha256 == sha256
        )
    )
    for earlier in session.exec(query):
        if earlier.status not in FINISHED_UNSUCCESSFULLY:
            raise Conflict(
                f"{upload.filename} was already submitted for {dataset_name} as submission #{earlier.id}",
                field=f"responses[{dataset_name}]",
            )


def can_view(submission: Submission, system: System, viewer: User | None) -> bool:
    """Private and not-yet-approved submissions are for their owner and admins only."""
    if viewer is not None and (viewer.is_admin or viewer.id == system.owner_id):
        return True
    published = submission.status not in (
        SubmissionStatus.submitted,
        SubmissionStatus.rejected,
        SubmissionStatus.withdrawn,
    )
    return published and (system.is_public or system.is_baseline)


def get_visible(session: Session, submission_id: int, viewer: User | None) -> tuple[Submission, System]:
    """The submission if the viewer may see it; otherwise 404 exactly as for an id that does not exist."""
    submission = session.get(Submission, submission_id)
    system = session.get(System, submission.system_id) if submission else None
    if submission is None or system is None or not can_view(submission, system, viewer):
        raise NotFound(f"no submission #{submission_id}")
    return submission, system
