"""HITs: what a HIT holds (ExternalQuestion, worker filters, reward) and the launch that creates one per task.

The account balance is checked first; each task becomes a HIT with MaxAssignments = the task's slots and a reward
for its real pairs only (quality checks ride along unpaid, as in the cost estimate). The HIT id is stored on the
task as soon as it exists, and `UniqueRequestToken` = `chateval-{experiment}-{task}`, so a launch retried after a
failure or a lost response never makes a second HIT for a task.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from xml.sax.saxutils import escape

from botocore.exceptions import ClientError
from sqlmodel import Session, col, select

from hub.errors import UnprocessableInput
from hub.models import Backend, Experiment, ExperimentItem, ItemKind, Task
from hub.services.human.experiments import MICRO
from hub.services.human.mturk.client import (
    AWS_ERRORS,
    InsufficientBalance,
    MTurkError,
    MTurkOptions,
    error_code,
    mturk_options,
    turk_code,
    with_backoff,
)
from hub.settings import HubSettings, get_settings

log = logging.getLogger(__name__)

EXTERNAL_QUESTION_SCHEMA = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
# MTurk's system qualification types.
LOCALE = "00000000000000000071"
APPROVAL_RATE = "000000000000000000L0"
APPROVED_HITS = "00000000000000000040"


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
        raise MTurkError(f"Mechanical Turk did not give the account balance: {error_code(exc)}") from exc
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
                    f"Mechanical Turk refused the HIT of task {task.index} ({error_code(exc)}); "
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
    duplicate = "alreadyexists" in turk_code(exc).lower() or (
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
        log.warning("looking up the HIT of %s failed: %s", token, error_code(lookup))
        return None
