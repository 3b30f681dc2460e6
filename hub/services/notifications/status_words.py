"""Every submission and experiment status in words: what it means, what happens next and who acts.

The one mapping pages, the JSON API and notifications use; no page shows a raw status name on its own."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hub.models import ExperimentStatus, SubmissionStatus


@dataclass(frozen=True)
class StatusWords:
    label: str  # a few words, for badges and tables
    meaning: str  # one sentence: where it is
    next_step: str  # what happens next
    who_acts: str  # "admin", "researcher", "hub" (a background job), "raters" or "nobody"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SUBMISSION: dict[SubmissionStatus, StatusWords] = {
    SubmissionStatus.submitted: StatusWords(
        "Waiting for review",
        "The files passed validation and wait for an admin's review.",
        "An admin approves it (the automatic evaluation starts) or rejects it with a reason.",
        "admin",
    ),
    SubmissionStatus.approved: StatusWords(
        "Approved, queued",
        "An admin approved it; the automatic evaluation is queued.",
        "A worker picks it up and computes the automatic metrics.",
        "hub",
    ),
    SubmissionStatus.evaluating: StatusWords(
        "Evaluating",
        "A worker is computing the automatic metrics.",
        "Scores are saved when every metric is done; a lost worker is replaced automatically.",
        "hub",
    ),
    SubmissionStatus.evaluated: StatusWords(
        "Scored",
        "The automatic scores are final and shown (publicly, if you chose so).",
        "Nothing more unless baselines were chosen for a human evaluation or an admin re-runs it.",
        "nobody",
    ),
    SubmissionStatus.human_evaluation: StatusWords(
        "Human evaluation",
        "Automatic scores are in; pairwise human evaluations against the chosen baselines were drafted.",
        "An admin reviews the cost and launches each draft; raters judge; it is complete when every one closes.",
        "admin",
    ),
    SubmissionStatus.complete: StatusWords(
        "Complete",
        "Automatic scores and every human evaluation of it are final.",
        "Nothing; the results stay as published.",
        "nobody",
    ),
    SubmissionStatus.rejected: StatusWords(
        "Rejected",
        "An admin rejected it; the reason is shown with it.",
        "Fix what the reason names and submit again.",
        "researcher",
    ),
    SubmissionStatus.failed: StatusWords(
        "Failed",
        "The evaluation stopped with an error, shown to you and to admins.",
        "An admin re-runs it once the cause is fixed; nothing is lost.",
        "admin",
    ),
    SubmissionStatus.withdrawn: StatusWords(
        "Withdrawn",
        "You withdrew it: it is on no public page or download; its records are kept.",
        "Nothing; submit the file again to have it evaluated.",
        "nobody",
    ),
}

EXPERIMENT: dict[ExperimentStatus, StatusWords] = {
    ExperimentStatus.draft: StatusWords(
        "Draft, waiting for launch",
        "The experiment is planned and its cost estimated; no rater sees it yet.",
        "An admin reviews the cost and launches it.",
        "admin",
    ),
    ExperimentStatus.open: StatusWords(
        "Open to raters",
        "Raters are judging its pairs.",
        "It closes when every task is judged (or an adaptive test decides), or an admin closes it.",
        "raters",
    ),
    ExperimentStatus.closed: StatusWords(
        "Closed",
        "No more judgements are taken; its results are final.",
        "The dataset's IRT fit is refreshed with its judgements.",
        "nobody",
    ),
}


def submission_words(status: SubmissionStatus | str) -> StatusWords:
    return SUBMISSION[SubmissionStatus(status)]


def experiment_words(status: ExperimentStatus | str) -> StatusWords:
    return EXPERIMENT[ExperimentStatus(status)]


def status_words(status: str) -> StatusWords | None:
    """Either kind by value (the status partial of the templates); None for anything else."""
    for table in (SUBMISSION, EXPERIMENT):
        for key, words in table.items():
            if key.value == str(status):
                return words
    return None
