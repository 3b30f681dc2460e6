"""What an evaluated submission holds for readers: the statuses with final scores, its responses read back."""

from __future__ import annotations

import logging
import math

from evaluation.dataset import Dataset
from evaluation.errors import EvaluationError
from evaluation.responses import parse_responses
from hub.errors import HubError
from hub.models import Submission, SubmissionStatus
from hub.storage import Storage

log = logging.getLogger(__name__)

# Statuses whose automatic scores are final enough to rank and compare.
RESULT_STATUSES = (SubmissionStatus.evaluated, SubmissionStatus.human_evaluation, SubmissionStatus.complete)


def finite(value: float | None) -> float | None:
    """JSON has no NaN or infinity; a score that is not a finite number is shown as missing."""
    return value if value is not None and math.isfinite(value) else None


def read_responses(storage: Storage, submission: Submission, dataset: Dataset) -> list[str]:
    """A stored response file, parsed by the toolkit into dataset prompt order."""
    try:
        data = storage.get(submission.responses_sha256)
        return parse_responses(  # allow_empty: blank lines were refused on upload unless they were meant
            data, dataset=dataset, name=f"submission {submission.id}", fmt=submission.responses_format, allow_empty=True
        )  # type: ignore[arg-type]
    except EvaluationError as exc:  # validated on upload, so this is damage on the server, not user input
        log.error("responses of submission %s do not parse: %s", submission.id, exc.describe())
        raise HubError(f"the responses of submission #{submission.id} cannot be read") from exc
