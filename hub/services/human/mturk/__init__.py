"""Amazon Mechanical Turk: one HIT per task, pointing at the hub's own rating page (an ExternalQuestion); polling
of submitted assignments (approve, or reject an excluded worker's); blocking of excluded workers.

Every function takes a boto3 `mturk` client, so tests hand in one wrapped in botocore's Stubber. Credentials come
from the usual AWS chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role).

- `client`: HIT options (`MTurkOptions`), errors, the boto3 client and retries on throttling.
- `hits`: what a HIT holds and the launch (`launch_hits`), which never makes a second HIT for a task.
- `workers`: the rating page's task and assignment for a worker, where it posts, and blocking a worker.
- `polling`: reviewing submitted assignments (`poll_experiment`, the periodic `poll_open_experiments`).

Callers use the package (`from hub.services.human import mturk; mturk.launch_hits(...)`): the names below are its
API, the ones used outside the package; everything else stays in its module.
"""

from hub.services.human.mturk.client import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    SANDBOX_ENDPOINT,
    InsufficientBalance,
    MTurkError,
    MTurkOptions,
    mturk_client,
    mturk_options,
    with_backoff,
)
from hub.services.human.mturk.hits import external_question_xml, hit_reward, launch_hits, qualification_requirements
from hub.services.human.mturk.polling import poll_experiment, poll_open_experiments
from hub.services.human.mturk.workers import (
    PREVIEW_ASSIGNMENT,
    block_worker,
    claim_for_worker,
    find_task_for_hit,
    submit_url,
    worker_blocker,
)

__all__ = [
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_CAP_SECONDS",
    "PREVIEW_ASSIGNMENT",
    "SANDBOX_ENDPOINT",
    "InsufficientBalance",
    "MTurkError",
    "MTurkOptions",
    "block_worker",
    "claim_for_worker",
    "external_question_xml",
    "find_task_for_hit",
    "hit_reward",
    "launch_hits",
    "mturk_client",
    "mturk_options",
    "poll_experiment",
    "poll_open_experiments",
    "qualification_requirements",
    "submit_url",
    "with_backoff",
    "worker_blocker",
]
