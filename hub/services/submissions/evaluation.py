"""The automatic-evaluation pipeline: score an approved submission with the toolkit, all or nothing."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import Engine, and_, or_, update
from sqlmodel import Session, select

from evaluation.errors import EvaluationError
from evaluation.evaluate import evaluate
from evaluation.loglik import parse_loglik
from evaluation.responses import parse_responses
from hub.models import Score, Submission, SubmissionStatus
from hub.models.common import utcnow
from hub.services.platform.datasets import installed_dataset
from hub.storage import Storage

log = logging.getLogger(__name__)
HEARTBEAT_EVERY = timedelta(seconds=5)
STALLED_AFTER = timedelta(minutes=5)


class EvaluationRun:
    """One attempt at scoring one submission. Progress goes to the database in short transactions; the scores
    and the final status go in one transaction, so a worker killed mid-way leaves no partial scores and the
    submission stays `evaluating` with a stale heartbeat, which `requeue_stalled` picks up."""

    def __init__(self, engine: Engine, storage: Storage, submission_id: int):
        self.engine = engine
        self.storage = storage
        self.submission_id = submission_id
        self._last_beat = utcnow() - HEARTBEAT_EVERY

    def run(self) -> SubmissionStatus | None:
        status = self._status()
        if status == SubmissionStatus.evaluated:
            return self._plan(status)  # scored, planning failed: the job's retry picks up here
        if status is None or not self.claim():
            return self._status()
        with Session(self.engine) as session:
            job = session.get(Submission, self.submission_id).model_copy()
        try:
            report = self._score(job)
        except EvaluationError as exc:
            return self._fail(f"{type(exc).__name__}: {exc.describe()}")
        except Exception as exc:  # a bug: keep the message for admins, the submission stays retryable
            log.exception("evaluation of submission %s crashed", self.submission_id)
            return self._fail(f"internal error: {type(exc).__name__}: {exc}")
        return self._plan(self._save(report))

    def _status(self) -> SubmissionStatus | None:
        with Session(self.engine) as session:
            submission = session.get(Submission, self.submission_id)
            return submission.status if submission else None

    def claim(self) -> bool:
        """Move the submission to `evaluating` if it is approved, or evaluating with a stale heartbeat (its worker
        died), in one conditional update: of two jobs for one submission (sent twice), only one gets it."""
        now = utcnow()
        startable = or_(
            Submission.status == SubmissionStatus.approved,
            and_(Submission.status == SubmissionStatus.evaluating, Submission.heartbeat_at < now - STALLED_AFTER),
        )
        claim = (
            update(Submission)
            .where(Submission.id == self.submission_id, startable)
            .values(status=SubmissionStatus.evaluating, progress=0.0, error=None, heartbeat_at=now, updated_at=now)
        )
        with Session(self.engine) as session:
            claimed = session.execute(claim).rowcount == 1
            session.commit()
        return claimed

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
        responses = parse_responses(
            self.storage.get(job.responses_sha256), dataset=dataset, name=name, fmt=job.responses_format
        )  # type: ignore[arg-type]
        loglik = (
            parse_loglik(self.storage.get(job.loglik_sha256), dataset=dataset, name=f"{name} log-likelihoods")
            if job.loglik_sha256
            else None
        )
        return evaluate(dataset, responses, loglik=loglik, progress=self._progress)

    def _progress(self, metric: str, done: int, total: int) -> None:
        now = utcnow()
        if now - self._last_beat < HEARTBEAT_EVERY:
            return
        self._last_beat = now
        with Session(self.engine) as session:
            submission = session.get(Submission, self.submission_id)
            if submission is not None:
                submission.heartbeat_at = now
                submission.progress = min(0.99, submission.progress + 0.01)
                session.commit()

    def _save(self, report) -> SubmissionStatus:
        with Session(self.engine) as session:
            submission = session.get(Submission, self.submission_id)
            existing = set(session.exec(select(Score.signature).where(Score.submission_id == self.submission_id)))
            for outcome in report.outcomes:
                result = outcome.result
                if result is None or result.signature in existing:
                    continue  # unavailable metric, or already scored under this exact signature
                session.add(
                    Score(
                        submission_id=self.submission_id,
                        metric=result.metric,
                        version=result.version,
                        signature=result.signature,
                        corpus=result.corpus,
                        higher_is_better=result.higher_is_better,
                        per_prompt=result.per_prompt,
                        details=result.details,
                    )
                )
            submission.status, submission.progress = SubmissionStatus.evaluated, 1.0
            submission.updated_at = utcnow()
            session.commit()
        return SubmissionStatus.evaluated

    def _fail(self, message: str) -> SubmissionStatus:
        with Session(self.engine) as session:
            submission = session.get(Submission, self.submission_id)
            submission.status, submission.error, submission.updated_at = SubmissionStatus.failed, message, utcnow()
            session.commit()
        return SubmissionStatus.failed


def stalled_submissions(engine: Engine) -> list[int]:
    """Submissions whose evaluating worker stopped sending heartbeats (killed, machine lost)."""
    cutoff = utcnow() - STALLED_AFTER
    with Session(engine) as session:
        query = select(Submission.id).where(
            Submission.status == SubmissionStatus.evaluating, Submission.heartbeat_at < cutoff
        )
        return list(session.exec(query))
