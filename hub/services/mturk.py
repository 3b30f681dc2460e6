"""Amazon Mechanical Turk: one HIT per task, pointing at the hub's own rating page (an ExternalQuestion); polling
of submitted assignments (approve, or reject an excluded worker's); blocking of excluded workers.

Every function takes a boto3 `mturk` client, so tests hand in one wrapped in botocore's Stubber. Credentials come
from the usual AWS chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role).

- Launch: the account balance is checked first; each task becomes a HIT with MaxAssignments = the task's slots
  and a reward for its real pairs only (quality checks ride along unpaid, as in the cost estimate). The HIT id is
  stored on the task as soon as it exists, and `UniqueRequestToken` = `chateval-{experiment}-{task}`, so a launch
  retried after a failure or a lost response never makes a second HIT for a task.
- Polling: an assignment is approved only when the hub holds its ratings (matched on MTurk's assignment id), and
  recorded as approved, so a second poll approves nothing again. Workers are paid for work done: an excluded
  worker's assignment is approved too, unless the experiment's `reject_excluded` option says otherwise.
  Assignments without ratings, HITs the hub does not know and errors are counted and logged, never fatal.
- Throttling (ThrottlingException, ServiceUnavailable, a RequestError about throttling) is retried with
  exponential backoff and full jitter, by botocore's retry mode and again by `with_backoff` around every call.

HIT options (the experiment's `settings["mturk"]`, checked by `MTurkOptions`): title, description, keywords,
countries (default US; empty = anywhere), min_approval_rate (95), min_approved_hits (100), lifetime_hours
(168), auto_approval_hours (72: MTurk pays by itself after this even if polling stops), frame_height (0 = the
worker's full window) and reject_excluded (false). Note the sandbox's workers have no approved HITs: set
`min_approved_hits` to 0 to try an experiment there with a fresh sandbox worker account.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from hub.errors import Conflict, Forbidden, HubError, NotFound, UnprocessableInput
from hub.models import (
    Assignment,
    AssignmentStatus,
    Backend,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    ItemKind,
    Rater,
    Task,
)
from hub.services.assignments import claim_task
from hub.services.experiments import MICRO
from hub.services.raters import rater_for
from hub.settings import HubSettings, get_settings

log = logging.getLogger(__name__)

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
EXTERNAL_QUESTION_SCHEMA = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
# MTurk's system qualification types.
LOCALE = "00000000000000000071"
APPROVAL_RATE = "000000000000000000L0"
APPROVED_HITS = "00000000000000000040"
# Where MTurk tells the page to post the finished assignment (`turkSubmitTo`): the worker site or its sandbox.
SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"

RETRY_CODES = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "ServiceUnavailable", "ServiceFault"}
)
BACKOFF_ATTEMPTS = 6
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 20.0
FEEDBACK_MAX = 1024  # MTurk's limit on RequesterFeedback and block reasons
AWS_ERRORS = (ClientError, BotoCoreError)  # an error answer, or none at all (network, missing credentials)


class MTurkError(HubError):
    """Mechanical Turk refused or failed a request (after retries)."""

    status_code = 502


class InsufficientBalance(Conflict):
    """The requester account cannot pay for the HITs about to be created."""


class MTurkOptions(BaseModel):
    """HIT options of an experiment (`settings["mturk"]`); the defaults follow common research practice."""

    model_config = {"extra": "forbid"}

    title: str = Field(default="Which chatbot reply is better?", min_length=1, max_length=128)
    description: str = Field(
        default="Read short conversations and pick the better of two possible next replies (or a tie).",
        min_length=1,
        max_length=2000,
    )
    keywords: str = Field(default="chatbot, dialogue, comparison, rating, research", max_length=1000)
    countries: list[str] = Field(default_factory=lambda: ["US"], max_length=50)
    min_approval_rate: int = Field(default=95, ge=0, le=100)
    min_approved_hits: int = Field(default=100, ge=0)
    lifetime_hours: int = Field(default=168, ge=1, le=365 * 24)
    auto_approval_hours: int = Field(default=72, ge=0, le=30 * 24)
    frame_height: int = Field(default=0, ge=0, le=10_000)
    reject_excluded: bool = False

    def model_post_init(self, _context: Any) -> None:
        for country in self.countries:
            if not re.fullmatch(r"[A-Z]{2}", country):
                raise ValueError(f"countries: {country!r} is not an ISO 3166 two-letter code such as 'US'")


def mturk_options(experiment: Experiment) -> MTurkOptions:
    try:
        return MTurkOptions.model_validate((experiment.settings or {}).get("mturk") or {})
    except (ValidationError, ValueError) as exc:
        raise UnprocessableInput(f"bad Mechanical Turk options: {exc}", field="mturk") from exc


# --- client and retries -------------------------------------------------------------------------------------


def mturk_client(settings: HubSettings | None = None):
    """A boto3 client for the sandbox or production requester endpoint, with botocore's adaptive retries."""
    settings = settings or get_settings()
    return boto3.client(
        "mturk",
        region_name=settings.mturk_region,
        endpoint_url=SANDBOX_ENDPOINT if settings.mturk_sandbox else PRODUCTION_ENDPOINT,
        config=Config(retries={"mode": "adaptive", "max_attempts": 8}, connect_timeout=10, read_timeout=30),
    )


def is_retryable(error: ClientError) -> bool:
    detail = error.response.get("Error", {})
    code, message = str(detail.get("Code", "")), str(detail.get("Message", ""))
    if code in RETRY_CODES:
        return True
    return code == "RequestError" and ("throttl" in message.lower() or "rate exceeded" in message.lower())


def with_backoff(
    call: Callable[..., Any],
    /,
    *args: Any,
    sleep: Callable[[float], None] | None = None,
    attempts: int = BACKOFF_ATTEMPTS,
    rng: random.Random | None = None,
    **kwargs: Any,
) -> Any:
    """`call(*args, **kwargs)`, retried on throttling with exponential backoff and full jitter: attempt n waits
    a random time in [0, min(cap, base * 2**n)]. Other errors, and the last throttling error, are raised."""
    sleep = sleep or time.sleep
    rng = rng or random.Random()
    for attempt in range(attempts):
        try:
            return call(*args, **kwargs)
        except ClientError as exc:
            if not is_retryable(exc) or attempt == attempts - 1:
                raise
            delay = rng.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt))
            log.info("MTurk throttled (%s); retry %d in %.2fs", _error_code(exc), attempt + 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _error_code(exc: Exception) -> str:
    if not isinstance(exc, ClientError):
        return f"{type(exc).__name__}: {exc}"  # no answer at all: network, credentials
    detail = exc.response.get("Error", {})
    return str(detail.get("Code", "")) + (f" {detail['Message']}" if detail.get("Message") else "")


def _turk_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("TurkErrorCode") or response.get("Error", {}).get("TurkErrorCode") or "")


# --- HIT contents -------------------------------------------------------------------------------------------


def external_question_xml(url: str, frame_height: int = 0) -> str:
    """An ExternalQuestion: MTurk frames `url`, adding assignmentId, hitId, workerId and turkSubmitTo to it.
    `frame_height` in pixels; 0 lets the frame take the worker's whole window."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_SCHEMA}">\n'
        f"  <ExternalURL>{escape(url)}</ExternalURL>\n"
        f"  <FrameHeight>{int(frame_height)}</FrameHeight>\n"
        "</ExternalQuestion>\n"
    )


def qualification_requirements(options: MTurkOptions | dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Worker filters: locale (countries), approval rate (>= 95%) and approved HIT count (>= 100) by default.
    A worker who does not meet them cannot accept the HIT (they may still preview it)."""
    if not isinstance(options, MTurkOptions):
        options = MTurkOptions.model_validate(options or {})
    requirements: list[dict[str, Any]] = []
    if options.countries:
        requirements.append(
            {
                "QualificationTypeId": LOCALE,
                "Comparator": "EqualTo" if len(options.countries) == 1 else "In",
                "LocaleValues": [{"Country": country} for country in options.countries],
                "ActionsGuarded": "Accept",
            }
        )
    if options.min_approval_rate > 0:
        requirements.append(
            {
                "QualificationTypeId": APPROVAL_RATE,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [options.min_approval_rate],
                "ActionsGuarded": "Accept",
            }
        )
    if options.min_approved_hits > 0:
        requirements.append(
            {
                "QualificationTypeId": APPROVED_HITS,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [options.min_approved_hits],
                "ActionsGuarded": "Accept",
            }
        )
    return requirements


def task_page_url(experiment: Experiment, settings: HubSettings | None = None) -> str:
    settings = settings or get_settings()
    return f"{settings.public_url.rstrip('/')}/mturk/experiments/{experiment.id}/task"


def request_token(experiment: Experiment, task: Task) -> str:
    return f"chateval-{experiment.id}-{task.id}"


def hit_reward(experiment: Experiment, pairs: int) -> Decimal:
    """Dollars for one assignment of a HIT: the reward per judgement times its real pairs, to the cent."""
    cents = Decimal(experiment.reward_microusd * pairs) / Decimal(MICRO // 100)
    return (cents.quantize(Decimal(1), rounding=ROUND_HALF_UP) / 100).quantize(Decimal("0.01"))


# --- launch ---------------------------------------------------------------------------------------------------


def _pairs_per_task(session: Session, experiment: Experiment) -> dict[int, int]:
    items = session.exec(
        select(ExperimentItem.task_id).where(
            ExperimentItem.experiment_id == experiment.id,
            ExperimentItem.kind == ItemKind.pair,
            col(ExperimentItem.auto_tie).is_(False),
        )
    ).all()
    counts: dict[int, int] = {}
    for task_id in items:
        if task_id is not None:
            counts[task_id] = counts.get(task_id, 0) + 1
    return counts


def check_balance(client, needed: Decimal, *, sleep: Callable[[float], None] | None = None) -> Decimal:
    """The available balance; InsufficientBalance when it is below `needed` dollars."""
    try:
        response = with_backoff(client.get_account_balance, sleep=sleep)
    except AWS_ERRORS as exc:
        raise MTurkError(f"Mechanical Turk did not give the account balance: {_error_code(exc)}") from exc
    available = Decimal(str(response.get("AvailableBalance") or "0"))
    if available < needed:
        raise InsufficientBalance(
            f"the Mechanical Turk account has ${available:.2f} available but this experiment needs ${needed:.2f} "
            "(rewards plus the platform fee); add funds and launch again"
        )
    return available


def launch_hits(
    session: Session,
    experiment: Experiment,
    client,
    *,
    settings: HubSettings | None = None,
    sleep: Callable[[float], None] | None = None,
) -> list[str]:
    """Create one HIT per task still without one; returns the new HIT ids. Use as
    `experiments.launch(..., backend_launch=lambda s, e: launch_hits(s, e, client))`."""
    settings = settings or get_settings()
    if experiment.backend != Backend.mturk:
        raise UnprocessableInput(f"experiment #{experiment.id} uses the {experiment.backend} backend, not mturk")
    url = task_page_url(experiment, settings)
    if not url.startswith("https://"):
        raise UnprocessableInput(
            f"Mechanical Turk frames only HTTPS pages; HUB_PUBLIC_URL is {settings.public_url!r}", field="public_url"
        )
    options = mturk_options(experiment)
    tasks = session.exec(
        select(Task)
        .where(Task.experiment_id == experiment.id, col(Task.external_id).is_(None))
        .order_by(col(Task.index))
    ).all()
    if not tasks:
        return []
    pairs = _pairs_per_task(session, experiment)
    rewards = {task.id: hit_reward(experiment, pairs.get(task.id, 0)) for task in tasks}
    cheap = [task.index for task in tasks if rewards[task.id] < Decimal("0.01")]
    if cheap:
        raise UnprocessableInput(
            f"task {cheap[0]} would pay less than $0.01, Mechanical Turk's smallest reward", field="reward_usd"
        )
    rewards_total = sum((rewards[task.id] * task.slots for task in tasks), Decimal(0))
    needed = (rewards_total * (100 + experiment.fee_percent) / 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    check_balance(client, needed, sleep=sleep)
    question = external_question_xml(url, frame_height=options.frame_height)
    requirements = qualification_requirements(options)
    created = []
    for task in tasks:
        token = request_token(experiment, task)
        params = {
            "MaxAssignments": task.slots,
            "AutoApprovalDelayInSeconds": options.auto_approval_hours * 3600,
            "LifetimeInSeconds": options.lifetime_hours * 3600,
            "AssignmentDurationInSeconds": experiment.task_timeout_minutes * 60,
            "Reward": f"{rewards[task.id]:.2f}",
            "Title": options.title,
            "Keywords": options.keywords,
            "Description": options.description,
            "Question": question,
            "RequesterAnnotation": token,
            "QualificationRequirements": requirements,
            "UniqueRequestToken": token,
        }
        try:
            hit_id = with_backoff(client.create_hit, sleep=sleep, **params)["HIT"]["HITId"]
        except AWS_ERRORS as exc:
            hit_id = _already_created(client, token, exc, sleep=sleep) if isinstance(exc, ClientError) else None
            if hit_id is None:
                raise MTurkError(
                    f"Mechanical Turk refused the HIT of task {task.index} ({_error_code(exc)}); "
                    f"{len(created)} HIT(s) were created and kept; launch again to create the rest"
                ) from exc
        task.external_id = hit_id
        session.add(task)
        session.commit()  # the HIT exists now: never lose its id, whatever happens to the next one
        created.append(hit_id)
        log.info("experiment #%s task %s: HIT %s", experiment.id, task.index, hit_id)
    experiment.settings = {**(experiment.settings or {}), "mturk_endpoint": client.meta.endpoint_url}
    session.add(experiment)
    return created


HIT_ID = re.compile(r"\b[0-9A-Z]{30}\b")


def _already_created(client, token: str, exc: ClientError, *, sleep=None) -> str | None:
    """After a create_hit error: the HIT made earlier with this token (a retried launch whose first response was
    lost), found through the HIT id MTurk names in its message or by its RequesterAnnotation; else None."""
    message = str(exc.response.get("Error", {}).get("Message", ""))
    duplicate = "alreadyexists" in _turk_code(exc).lower() or (
        "already" in message.lower() and ("exist" in message.lower() or "processed" in message.lower())
    )
    if not duplicate:
        return None
    try:
        for candidate in HIT_ID.findall(message):
            hit = with_backoff(client.get_hit, sleep=sleep, HITId=candidate)["HIT"]
            if hit.get("RequesterAnnotation") == token:
                return hit["HITId"]
        kwargs: dict[str, Any] = {"MaxResults": 100}
        while True:
            page = with_backoff(client.list_hits, sleep=sleep, **kwargs)
            for hit in page.get("HITs", []):
                if hit.get("RequesterAnnotation") == token:
                    return hit["HITId"]
            if not page.get("NextToken") or not page.get("HITs"):
                return None
            kwargs["NextToken"] = page["NextToken"]
    except AWS_ERRORS as lookup:
        log.warning("looking up the HIT of %s failed: %s", token, _error_code(lookup))
        return None


# --- the rating page ------------------------------------------------------------------------------------------


def find_task_for_hit(session: Session, experiment: Experiment, hit_id: str) -> Task:
    task = session.exec(select(Task).where(Task.experiment_id == experiment.id, Task.external_id == hit_id)).first()
    if task is None:
        raise NotFound(f"HIT {hit_id!r} is not part of experiment #{experiment.id} on this hub")
    return task


def claim_for_worker(
    session: Session, experiment: Experiment, task: Task, worker_id: str, assignment_id: str
) -> Assignment:
    """The worker's assignment of the HIT's task: the one they already have (the page reloaded, or the HIT was
    returned and accepted again: the newest MTurk assignment id is kept), else a new claim of a slot."""
    rater = rater_for(session, Backend.mturk.value, worker_id)
    existing = session.exec(
        select(Assignment).where(Assignment.task_id == task.id, Assignment.rater_id == rater.id)
    ).first()
    if existing is None:
        assignment = claim_task(session, experiment, rater, task=task, external_assignment_id=assignment_id)
        if assignment is None:
            raise Conflict("every place in this HIT is held by another worker right now; return it and try again later")
        return assignment
    if existing.status in (AssignmentStatus.active, AssignmentStatus.released):
        if experiment.status != ExperimentStatus.open:
            raise Conflict(f"experiment #{experiment.id} is {experiment.status}: it takes no ratings")
        if rater.excluded:
            raise Forbidden("this worker no longer takes part in the hub's evaluations")
        if existing.external_assignment_id != assignment_id:
            existing.external_assignment_id = assignment_id
            session.add(existing)
            session.commit()
            session.refresh(existing)
    return existing


def submit_url(turk_submit_to: str) -> str:
    """Where the finished page posts the assignment: `{turkSubmitTo}/mturk/externalSubmit`, only to MTurk."""
    base = turk_submit_to.rstrip("/")
    if base not in SUBMIT_HOSTS:
        raise UnprocessableInput(f"turkSubmitTo must be one of {', '.join(SUBMIT_HOSTS)}", field="turkSubmitTo")
    return f"{base}/mturk/externalSubmit"


# --- polling --------------------------------------------------------------------------------------------------


@dataclass
class PollReport:
    experiment_id: int
    hits: int = 0
    approved: int = 0
    rejected: int = 0
    synced: int = 0  # reviewed on MTurk itself (auto-approval, the requester website): recorded here
    already_reviewed: int = 0
    without_ratings: int = 0  # submitted on MTurk, but the hub holds no ratings for it: not approved
    unknown_hits: int = 0  # an assignment of a HIT this experiment does not know: ignored
    errors: int = 0
    messages: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _list_assignments(client, hit_id: str, sleep=None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"HITId": hit_id, "MaxResults": 100}
    while True:
        page = with_backoff(client.list_assignments_for_hit, sleep=sleep, **kwargs)
        found.extend(page.get("Assignments", []))
        if not page.get("NextToken") or not page.get("Assignments"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def _record(session: Session, assignment: Assignment, status: AssignmentStatus) -> bool:
    """Move a submitted assignment to approved/rejected; False when another poller got there first."""
    moved = session.execute(
        update(Assignment)
        .where(col(Assignment.id) == assignment.id, col(Assignment.status) == AssignmentStatus.submitted)
        .values(status=status)
    ).rowcount
    session.commit()
    return bool(moved)


def poll_experiment(
    session: Session, experiment: Experiment, client, *, sleep: Callable[[float], None] | None = None
) -> PollReport:
    """Review the submitted assignments of every HIT of the experiment. Safe to run again at any time."""
    report = PollReport(experiment_id=experiment.id or 0)
    options = mturk_options(experiment)
    tasks = session.exec(
        select(Task)
        .where(Task.experiment_id == experiment.id, col(Task.external_id).is_not(None))
        .order_by(col(Task.index))
    ).all()
    for task in tasks:
        reviewed = session.exec(
            select(Assignment.id).where(
                Assignment.task_id == task.id,
                col(Assignment.status).in_((AssignmentStatus.approved, AssignmentStatus.rejected)),
            )
        ).all()
        if len(reviewed) >= task.slots:
            continue  # every assignment MTurk can hold for this HIT is reviewed
        report.hits += 1
        try:
            listed = _list_assignments(client, str(task.external_id), sleep)
        except AWS_ERRORS as exc:
            report.errors += 1
            report.messages.append(f"HIT {task.external_id}: {_error_code(exc)}")
            log.warning("experiment #%s: listing HIT %s failed: %s", experiment.id, task.external_id, _error_code(exc))
            continue
        for listing in listed:
            _review(session, experiment, task, listing, options, client, report, sleep)
    log.info("polled MTurk for experiment #%s: %s", experiment.id, report.as_dict())
    return report


def _review(session, experiment, task, listing, options, client, report: PollReport, sleep) -> None:
    external_id, hit_id = listing.get("AssignmentId", ""), listing.get("HITId", task.external_id)
    if hit_id != task.external_id:
        report.unknown_hits += 1
        report.messages.append(f"assignment {external_id} of unknown HIT {hit_id}")
        log.warning("experiment #%s: assignment %s names unknown HIT %s", experiment.id, external_id, hit_id)
        return
    assignment = session.exec(
        select(Assignment).where(
            Assignment.external_assignment_id == external_id,
            Assignment.task_id == task.id,
            Assignment.experiment_id == experiment.id,
        )
    ).first()
    status = listing.get("AssignmentStatus")
    if assignment is None or assignment.status in (AssignmentStatus.active, AssignmentStatus.released):
        if status == "Submitted":
            report.without_ratings += 1
            report.messages.append(f"assignment {external_id} of HIT {hit_id}: no ratings on the hub, not approved")
            log.warning("experiment #%s: MTurk assignment %s has no ratings here", experiment.id, external_id)
        return
    if assignment.status != AssignmentStatus.submitted:
        report.already_reviewed += 1
        return
    if status in ("Approved", "Rejected"):  # reviewed on MTurk's side: auto-approval or the requester website
        target = AssignmentStatus.approved if status == "Approved" else AssignmentStatus.rejected
        report.synced += _record(session, assignment, target)
        return
    rater = session.get(Rater, assignment.rater_id)
    reject = options.reject_excluded and rater is not None and rater.excluded
    try:
        if reject:
            reason = (rater.exclusion_reason if rater else None) or "excluded by the study's quality checks"
            with_backoff(
                client.reject_assignment,
                sleep=sleep,
                AssignmentId=external_id,
                RequesterFeedback=reason[:FEEDBACK_MAX],
            )
        else:
            with_backoff(client.approve_assignment, sleep=sleep, AssignmentId=external_id)
    except AWS_ERRORS as exc:
        if "InvalidAssignmentState" in _turk_code(exc):  # reviewed meanwhile; the next poll records how
            report.already_reviewed += 1
            return
        report.errors += 1
        report.messages.append(f"assignment {external_id}: {_error_code(exc)}")
        log.warning("experiment #%s: reviewing %s failed: %s", experiment.id, external_id, _error_code(exc))
        return
    if _record(session, assignment, AssignmentStatus.rejected if reject else AssignmentStatus.approved):
        if reject:
            report.rejected += 1
        else:
            report.approved += 1


def _experiments_to_poll(session: Session) -> list[Experiment]:
    """Open MTurk experiments, and closed ones that still have submitted assignments to review."""
    pending = select(Assignment.experiment_id).where(Assignment.status == AssignmentStatus.submitted)
    query = select(Experiment).where(
        Experiment.backend == Backend.mturk,
        (col(Experiment.status) == ExperimentStatus.open)
        | ((col(Experiment.status) == ExperimentStatus.closed) & col(Experiment.id).in_(pending)),
    )
    return list(session.exec(query.order_by(col(Experiment.id))))


def poll_open_experiments(engine: Engine, client_factory: Callable[[], Any] = mturk_client) -> int:
    """The periodic job: poll every MTurk experiment with work to review; returns assignments approved or
    rejected. No client is made (no AWS call) when there is nothing to poll."""
    reviewed = 0
    with Session(engine) as session:
        found = _experiments_to_poll(session)
        if not found:
            return 0
        client = client_factory()
        for experiment in found:
            try:
                report = poll_experiment(session, experiment, client)
            except HubError as exc:
                log.warning("experiment #%s not polled: %s", experiment.id, exc.message)
                continue
            reviewed += report.approved + report.rejected
    return reviewed


# --- blocking -------------------------------------------------------------------------------------------------


def block_worker(client, rater: Rater, reason: str, *, sleep: Callable[[float], None] | None = None) -> None:
    """Block an excluded MTurk worker from all of this requester's HITs (pass as `set_excluded(block=...)`)."""
    if rater.backend != Backend.mturk.value:
        raise UnprocessableInput(f"rater {rater.public_hash} is a {rater.backend} rater, not a Mechanical Turk worker")
    reason = reason.strip() or "excluded by the study's quality checks"
    try:
        with_backoff(client.create_worker_block, sleep=sleep, WorkerId=rater.external_id, Reason=reason[:FEEDBACK_MAX])
    except AWS_ERRORS as exc:
        raise MTurkError(f"Mechanical Turk did not block the worker: {_error_code(exc)}") from exc


def worker_blocker(client) -> Callable[[Rater, str], None]:
    """`block` for `raters.set_excluded`."""
    return lambda rater, reason: block_worker(client, rater, reason)
