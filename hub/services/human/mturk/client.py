"""The MTurk client: HIT options, typed errors, the boto3 client and retries with backoff on throttling.

Throttling (ThrottlingException, ServiceUnavailable, a RequestError about throttling) is retried with exponential
backoff and full jitter, by botocore's retry mode and again by `with_backoff` around every call.

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
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, Field, ValidationError

from hub.errors import Conflict, HubError, UnprocessableInput
from hub.models import Experiment
from hub.settings import HubSettings, get_settings

log = logging.getLogger(__name__)

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"

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
            log.info("MTurk throttled (%s); retry %d in %.2fs", error_code(exc), attempt + 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def error_code(exc: Exception) -> str:
    if not isinstance(exc, ClientError):
        return f"{type(exc).__name__}: {exc}"  # no answer at all: network, credentials
    detail = exc.response.get("Error", {})
    return str(detail.get("Code", "")) + (f" {detail['Message']}" if detail.get("Message") else "")


def turk_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("TurkErrorCode") or response.get("Error", {}).get("TurkErrorCode") or "")
