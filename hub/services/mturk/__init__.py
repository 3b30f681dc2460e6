"""Amazon Mechanical Turk: one HIT per task, pointing at the hub's own rating page (an ExternalQuestion); polling
of submitted assignments (approve, or reject an excluded worker's); blocking of excluded workers.

Every function takes a boto3 `mturk` client, so tests hand in one wrapped in botocore's Stubber. Credentials come
from the usual AWS chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role).

- `client`: HIT options (`MTurkOptions`), errors, the boto3 client and retries on throttling.
- `hits`: what a HIT holds and the launch (`launch_hits`), which never makes a second HIT for a task.
- `workers`: the rating page's task and assignment for a worker, where it posts, and blocking a worker.
- `polling`: reviewing submitted assignments (`poll_experiment`, the periodic `poll_open_experiments`).

Callers use the package (`from hub.services import mturk; mturk.launch_hits(...)`): the names below are its API.
"""

from hub.services.mturk.client import (
    AWS_ERRORS,
    BACKOFF_ATTEMPTS,
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    FEEDBACK_MAX,
    PRODUCTION_ENDPOINT,
    RETRY_CODES,
    SANDBOX_ENDPOINT,
    InsufficientBalance,
    MTurkError,
    MTurkOptions,
    is_retryable,
    mturk_client,
    mturk_options,
    with_backoff,
)
from hub.services.mturk.hits import (
    APPROVAL_RATE,
    APPROVED_HITS,
    EXTERNAL_QUESTION_SCHEMA,
    HIT_ID,
    LOCALE,
    check_balance,
    external_question_xml,
    hit_reward,
    launch_hits,
    qualification_requirements,
    request_token,
    task_page_url,
)
from hub.services.mturk.polling import PollReport, poll_experiment, poll_open_experiments
from hub.services.mturk.workers import (
    PREVIEW_ASSIGNMENT,
    SUBMIT_HOSTS,
    block_worker,
    claim_for_worker,
    find_task_for_hit,
    submit_url,
    worker_blocker,
)

__all__ = [
    "APPROVAL_RATE",
    "APPROVED_HITS",
    "AWS_ERRORS",
    "BACKOFF_ATTEMPTS",
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_CAP_SECONDS",
    "EXTERNAL_QUESTION_SCHEMA",
    "FEEDBACK_MAX",
    "HIT_ID",
    "LOCALE",
    "PREVIEW_ASSIGNMENT",
    "PRODUCTION_ENDPOINT",
    "RETRY_CODES",
    "SANDBOX_ENDPOINT",
    "SUBMIT_HOSTS",
    "InsufficientBalance",
    "MTurkError",
    "MTurkOptions",
    "PollReport",
    "block_worker",
    "check_balance",
    "claim_for_worker",
    "external_question_xml",
    "find_task_for_hit",
    "hit_reward",
    "is_retryable",
    "launch_hits",
    "mturk_client",
    "mturk_options",
    "poll_experiment",
    "poll_open_experiments",
    "qualification_requirements",
    "request_token",
    "submit_url",
    "task_page_url",
    "with_backoff",
    "worker_blocker",
]
