"""The worker side of the queue: what each named job runs, and starting consumers (threads or `chateval worker`).

Only this module imports the services that jobs run; services enqueue through `hub.queue` by name."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from huey.consumer import Consumer

from hub import queue
from hub.db import get_engine
from hub.services.conversations import evaluation as conversation_evaluation
from hub.services.conversations import uploads as conversation_uploads
from hub.services.human.mturk.polling import poll_open_experiments
from hub.services.judging import rater_qa
from hub.services.judging import runs as judging_runs
from hub.services.notifications import mail
from hub.services.platform.outbox import drain
from hub.services.publishing import snapshot
from hub.services.statistics import irt_fits
from hub.services.studies import assistance
from hub.services.submissions.evaluation import EvaluationRun, stalled_submissions
from hub.settings import get_settings
from hub.storage import get_storage

log = logging.getLogger(__name__)


def evaluate_submission(submission_id: int) -> str | None:
    status = EvaluationRun(get_engine(), get_storage(), submission_id).run()
    judging_runs.after_evaluation(get_engine(), submission_id)  # the dataset's judges, once the metrics are in
    return status.value if status else None


def requeue_stalled() -> list[int]:
    """The sweep: send the jobs the outbox holds (the queue was down), then retry evaluations whose worker was lost
    (no heartbeat for HUB_STALLED_AFTER_SECONDS). Runs once a minute as a periodic task, and every
    HUB_SWEEP_SECONDS in each `chateval worker` (`start_sweeper`)."""
    sent = drain(get_engine(), queue.send_outbox_job)
    stalled = stalled_submissions(get_engine())
    for submission_id in stalled:
        log.warning("submission %s: its worker was lost (no heartbeat), evaluation re-queued", submission_id)
        queue.enqueue_evaluation(submission_id)
    conversation_uploads.resend_queued(get_engine())  # conversation sets whose job was lost or never sent
    return sent + stalled


def start_sweeper() -> threading.Event:
    """Run the sweep every HUB_SWEEP_SECONDS on a daemon thread (a periodic task runs once a minute at most);
    set the returned event to stop it. Errors (database or queue down) are logged and the next round tries again."""
    stop, every = threading.Event(), get_settings().sweep_seconds

    def sweep() -> None:
        while not stop.wait(every):
            try:
                requeue_stalled()
            except Exception:
                log.warning("sweep failed; next try in %s s", every, exc_info=True)

    threading.Thread(target=sweep, name="sweeper", daemon=True).start()
    return stop


def poll_mturk() -> int:
    """Fetch submitted Mechanical Turk assignments of open MTurk experiments (approve, reconcile)."""
    return poll_open_experiments(get_engine())


def refit_irt(dataset_name: str) -> int | None:
    """Refit the published IRT model of a dataset if its public judgements changed; the new fit's id or None."""
    return irt_fits.refit(get_engine(), dataset_name)


def refit_all_irt() -> list[int]:
    return irt_fits.refit_all(get_engine())


def judge_submission(run_id: int) -> str:
    """A judging run: the dataset's function metrics, rubrics and pairwise judges over one submission."""
    return judging_runs.run_judging(get_engine(), get_storage(), run_id)


def publish_snapshot() -> str | None:
    """Publish the public snapshot to HUB_SNAPSHOT_URL (a folder or s3://bucket/prefix); its version, or None when
    no target is set (the job is off)."""
    target = get_settings().snapshot_url
    return snapshot.publish_snapshot(target).version if target else None


def send_mail() -> int:
    """Send the e-mail outbox (notifications, password-reset links) over SMTP; every minute and after each change."""
    return mail.send_pending(get_engine())


def evaluate_conversation_set(set_id: int) -> str | None:
    """Function metrics over every turn and conversation of an uploaded conversation set."""
    return conversation_evaluation.evaluate_set(get_engine(), get_storage(), set_id)


def run_rater_qa(run_id: int) -> str:
    """A QA run: a rubric graded by a judge over the free-text reasons raters gave in one experiment."""
    return rater_qa.run_rater_qa(get_engine(), run_id)


def suggest_annotations(message_id: int) -> int:
    """A study judge's pre-annotation suggestions for one message (every arm; shown to the assisted one)."""
    return assistance.suggest_for_message(get_engine(), message_id)


HANDLERS: dict[str, Callable[..., Any]] = {
    queue.EVALUATE_SUBMISSION: evaluate_submission,
    queue.REQUEUE_STALLED: requeue_stalled,
    queue.POLL_MTURK: poll_mturk,
    queue.REFIT_IRT: refit_irt,
    queue.REFIT_ALL_IRT: refit_all_irt,
    queue.PUBLISH_SNAPSHOT: publish_snapshot,
    queue.JUDGE_SUBMISSION: judge_submission,
    queue.EVALUATE_CONVERSATION_SET: evaluate_conversation_set,
    queue.SEND_MAIL: send_mail,
    queue.RATER_QA: run_rater_qa,
    queue.SUGGEST_ANNOTATIONS: suggest_annotations,
}


def register() -> dict:
    """Hand the handlers to the queue and register its tasks; before any consumer starts."""
    queue.set_handlers(HANDLERS)
    return queue.tasks()


class EmbeddedConsumer(Consumer):
    """Worker threads inside another program (`chateval serve`, tests): leaves its signal handlers alone."""

    def _set_signal_handlers(self) -> None:
        pass


def start_embedded_consumer(workers: int = 1, *, periodic: bool = True) -> EmbeddedConsumer:
    """Start consuming the queue in background threads; call `.stop(graceful=True)` to finish."""
    register()  # the tasks and their handlers, before the consumer looks them up
    consumer = EmbeddedConsumer(queue.get_huey(), workers=workers, periodic=periodic, initial_delay=0.05, max_delay=1.0)
    consumer.start()
    return consumer
