"""The automatic-evaluation pipeline: score an approved submission with the toolkit, all or nothing."""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta

from sqlalchemy import Engine, and_, case, or_, update
from sqlmodel import Session, select

from evaluation.errors import EvaluationError
from evaluation.evaluate import evaluate
from evaluation.loglik import parse_loglik
from evaluation.responses import parse_responses
from hub.models import Score, Submission, SubmissionStatus
from hub.models.common import utcnow
from hub.services.platform.datasets import installed_dataset
from hub.services.platform.word_vectors import vectors_for
from hub.settings import get_settings
from hub.storage import Storage

log = logging.getLogger(__name__)


def stalled_after() -> timedelta:
    """A run whose heartbeat is older than this lost its worker (HUB_STALLED_AFTER_SECONDS)."""
    return timedelta(seconds=get_settings().stalled_after_seconds)


def heartbeat_every() -> float:
    """Seconds between heartbeats: a quarter of the stall limit (at most 5 s), so a busy machine misses a few."""
    return min(5.0, get_settings().stalled_after_seconds / 4)


def this_worker() -> str:
    """The worker holding a run, as host:pid (shown to admins; the run itself is told apart by its attempt)."""
    return f"{socket.gethostname()[:150]}:{os.getpid()}"


class EvaluationRun:
    """One attempt at scoring one submission. Progress goes to the database in short transactions; the scores
    and the final status go in one transaction, so a worker killed mid-way leaves no partial scores and the
    submission stays `evaluating` with a stale heartbeat, which the sweep (`requeue_stalled`, every
    HUB_SWEEP_SECONDS) sees once it is HUB_STALLED_AFTER_SECONDS old: the next run counts the lost worker.

    A run is fenced by its attempt number: heartbeats, the scores and the final status are written only while the
    submission is still this attempt's, so a worker that was given up for lost and wakes up writes nothing."""

    def __init__(self, engine: Engine, storage: Storage, submission_id: int):
        self.engine = engine
        self.storage = storage
        self.submission_id = submission_id
        self.attempt = 0  # set by claim()
        self._last_progress = utcnow()

    def run(self) -> SubmissionStatus | None:
        status = self._status()
        if status == SubmissionStatus.evaluated:
            return self._plan(status)  # scored, planning failed: the job's retry picks up here
        if status is None or not self.claim():
            return self._status()
        with Session(self.engine) as session:
            job = session.get(Submission, self.submission_id).model_copy()
        stop = threading.Event()
        beating = threading.Thread(target=self._beat, args=(stop,), name=f"heartbeat-{self.submission_id}", daemon=True)
        beating.start()
        try:
            report = self._score(job)
        except EvaluationError as exc:
            return self._fail(f"{type(exc).__name__}: {exc.describe()}")
        except Exception as exc:  # a bug: keep the message for admins, the submission stays retryable
            log.exception("evaluation of submission %s crashed", self.submission_id)
            return self._fail(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            stop.set()
            beating.join()
        status = self._save(report)
        return self._plan(status) if status == SubmissionStatus.evaluated else status

    def _status(self) -> SubmissionStatus | None:
        with Session(self.engine) as session:
            submission = session.get(Submission, self.submission_id)
            return submission.status if submission else None

    def claim(self) -> bool:
        """Move the submission to `evaluating` if it is approved, or evaluating with a stale heartbeat (its worker
        was lost: counted), in one conditional update: of two jobs for one submission (sent twice), only one gets
        it. The claim starts the next attempt, which fences off any earlier run."""
        now = utcnow()
        lost = and_(Submission.status == SubmissionStatus.evaluating, Submission.heartbeat_at < now - stalled_after())
        claim = (
            update(Submission)
            .where(Submission.id == self.submission_id, or_(Submission.status == SubmissionStatus.approved, lost))
            .values(
                status=SubmissionStatus.evaluating,
                progress=0.0,
                error=None,
                heartbeat_at=now,
                started_at=now,
                updated_at=now,
                worker_id=this_worker(),
                attempts=Submission.attempts + 1,
                worker_losses=Submission.worker_losses
                + case((Submission.status == SubmissionStatus.evaluating, 1), else_=0),
            )
        )
        with Session(self.engine) as session:
            claimed = session.execute(claim).rowcount == 1
            if claimed:
                self.attempt = session.get(Submission, self.submission_id).attempts
            session.commit()
        return claimed

    def _mine(self):
        """The submission while this run still holds it (no later attempt took it over)."""
        return and_(
            Submission.id == self.submission_id,
            Submission.status == SubmissionStatus.evaluating,
            Submission.attempts == self.attempt,
        )

    def _beat(self, stop: threading.Event) -> None:
        """Heartbeats on a thread of their own, so a long metric without progress calls still shows life."""
        while not stop.wait(heartbeat_every()):
            try:
                with Session(self.engine) as session:
                    session.execute(update(Submission).where(self._mine()).values(heartbeat_at=utcnow()))
                    session.commit()
            except Exception:  # the database is busy or down: the next beat tries again
                log.warning("heartbeat of submission %s failed", self.submission_id, exc_info=True)

    def _plan(self, status: SubmissionStatus) -> SubmissionStatus:
        """The next step of the lifecycle once scored: draft experiments against the chosen baselines (idempotent)."""
        from hub.services.human.human_pipeline import plan_human_evaluation

        return plan_human_evaluation(self.engine, self.storage, self.submission_id) or status

    def _score(self, job: Submission):
        dataset = installed_dataset(job.dataset_name)
        if dataset.fingerprint != job.dataset_fingerprint:
            raise EvaluationError(
                f"dataset {job.dataset_name} changed since submission ({job.dataset_fingerprint} -> "
                f"{dataset.fingerprint}); re-submit against the current version"
            )
        name = f"submission {job.id}"
        responses = parse_responses(  # allow_empty: blank lines were refused on upload unless they were meant
            self.storage.get(job.responses_sha256),
            dataset=dataset,
            name=name,
            fmt=job.responses_format,
            allow_empty=True,
        )  # type: ignore[arg-type]
        loglik = (
            parse_loglik(self.storage.get(job.loglik_sha256), dataset=dataset, name=f"{name} log-likelihoods")
            if job.loglik_sha256
            else None
        )
        vectors = vectors_for(job.dataset_name).path  # HUB_WORD_VECTORS(_DATASETS); None: reported unavailable
        embeddings = str(vectors) if vectors is not None else None
        return evaluate(dataset, responses, loglik=loglik, embeddings=embeddings, progress=self._progress)

    def _progress(self, metric: str, done: int, total: int) -> None:
        now = utcnow()
        if (now - self._last_progress).total_seconds() < heartbeat_every():
            return
        self._last_progress = now
        step = update(Submission).where(self._mine(), Submission.progress < 0.99)
        with Session(self.engine) as session:
            session.execute(step.values(progress=Submission.progress + 0.01))
            session.commit()

    def _save(self, report) -> SubmissionStatus | None:
        """The scores and `evaluated` in one transaction, if this run still holds the submission; else nothing."""
        with Session(self.engine) as session:
            # First the conditional status change: it locks the row, so a claim by another worker waits for this
            # transaction and then finds the submission evaluated (or this run finds it taken and writes nothing).
            done = update(Submission).where(self._mine()).values(status=SubmissionStatus.evaluated, progress=1.0)
            if session.execute(done.values(updated_at=utcnow())).rowcount != 1:
                session.rollback()
                log.warning(
                    "submission %s was taken over by a later run; attempt %s discarded",
                    self.submission_id,
                    self.attempt,
                )
                return self._status()
            existing = set(session.exec(select(Score.signature).where(Score.submission_id == self.submission_id)))
            for outcome in report.outcomes:
                result = outcome.result
                if result is None or result.signature in existing:
                    continue  # unavailable metric, or already scored under this exact signature
                session.add(Score.of_result(self.submission_id, result))
            session.commit()
        return SubmissionStatus.evaluated

    def _fail(self, message: str) -> SubmissionStatus | None:
        failed = update(Submission).where(self._mine()).values(status=SubmissionStatus.failed, error=message)
        with Session(self.engine) as session:
            session.execute(failed.values(updated_at=utcnow()))
            session.commit()
        return self._status()


def stalled_submissions(engine: Engine) -> list[int]:
    """Submissions whose evaluating worker stopped sending heartbeats (killed, machine lost)."""
    cutoff = utcnow() - stalled_after()
    with Session(engine) as session:
        query = select(Submission.id).where(
            Submission.status == SubmissionStatus.evaluating, Submission.heartbeat_at < cutoff
        )
        return list(session.exec(query))
