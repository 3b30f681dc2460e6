"""The judging job of one submission: the dataset's function metrics (as scores), its rubrics (a grade, PASSED/REDO
and explanations per response) and its pairwise judges (both orders against the baselines and other public systems,
stored as judge judgements, never as human ratings). A run's state and progress live in `JudgingRun`.

Services start runs (`request_run`, `after_evaluation`) by enqueueing the job by name; `hub.jobs` runs `run_judging`."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Engine, delete, or_
from sqlmodel import Session, col, select

from evaluation.errors import EvaluationError
from evaluation.evaluate import evaluate
from evaluation.judges.pairs import SystemRef, dataset_pairs
from evaluation.judges.run import JudgeIdentity, judge_pairs
from evaluation.judges.templates import get_template
from evaluation.llm.cache import CallCache
from evaluation.llm.client import ChatClient
from evaluation.rubrics import dataset_items, grade_items
from hub import queue
from hub.errors import HubError, NotFound, QueueUnavailable
from hub.models import (
    DatasetJudging,
    Judge,
    JudgeJudgement,
    JudgingRun,
    RubricGrade,
    Score,
    Submission,
    System,
    User,
)
from hub.models.common import utcnow
from hub.services.judging.registry import attachments, endpoint_config, parse_attached_rubric
from hub.services.notifications.status_words import submission_words
from hub.services.platform import audit
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions.results import RESULT_STATUSES, read_responses
from hub.settings import get_settings
from hub.storage import Storage

log = logging.getLogger(__name__)
ERROR_CHARS = 1_000


def run_json(run: JudgingRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "submission_id": run.submission_id,
        "status": run.status,
        "progress": run.progress,
        "detail": run.detail,
        "error": run.error,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
    }


def _new_run(session: Session, submission_id: int) -> JudgingRun:
    run = JudgingRun(submission_id=submission_id)
    session.add(run)
    session.commit()
    session.refresh(run)
    return run


def request_run(session: Session, admin: User, submission_id: int) -> JudgingRun:
    """An admin's on-demand run (a re-run replaces the submission's grades; judged pairs are kept)."""
    from hub.errors import Conflict, Forbidden

    if not admin.is_admin:
        raise Forbidden("only admins can start judging runs")
    submission = session.get(Submission, submission_id)
    if submission is None:
        raise NotFound(f"no submission #{submission_id}")
    if submission.status not in RESULT_STATUSES:
        status = submission_words(submission.status).label.lower()
        raise Conflict(f"submission #{submission_id} is {status}; it is judged once its automatic scores are in")
    if not attachments(session, submission.dataset_name):
        raise Conflict(f"dataset {submission.dataset_name} has no judge, rubric or function metric attached")
    run = _new_run(session, submission_id)
    audit.record(
        session, actor=admin, action="request_judging", target=f"submission #{submission_id}", detail={"run": run.id}
    )
    queue.enqueue(queue.JUDGE_SUBMISSION, run.id)
    return run


def after_evaluation(engine: Engine, submission_id: int) -> int | None:
    """Once the automatic metrics are in: queue a run if the dataset attaches anything and none ran yet."""
    with Session(engine) as session:
        submission = session.get(Submission, submission_id)
        if submission is None or submission.status not in RESULT_STATUSES:
            return None
        if not attachments(session, submission.dataset_name):
            return None
        if session.exec(select(JudgingRun.id).where(JudgingRun.submission_id == submission_id)).first():
            return None
        run = _new_run(session, submission_id)
    try:
        queue.enqueue(queue.JUDGE_SUBMISSION, run.id)
    except QueueUnavailable as exc:  # the scores stand; the run waits for an admin's re-run
        with Session(engine) as session:
            failed = session.get(JudgingRun, run.id)
            failed.status, failed.error = "failed", f"{exc.message}; start it again from /admin/judging"
            session.add(failed)
            session.commit()
    return run.id


def latest_run(session: Session, submission_id: int) -> JudgingRun | None:
    query = select(JudgingRun).where(JudgingRun.submission_id == submission_id).order_by(col(JudgingRun.id).desc())
    return session.exec(query).first()


class _Run:
    def __init__(self, engine: Engine, storage: Storage, run_id: int):
        self.engine, self.storage, self.run_id = engine, storage, run_id
        self.detail: dict[str, Any] = {}

    def update(self, **values: Any) -> None:
        with Session(self.engine) as session:
            run = session.get(JudgingRun, self.run_id)
            for key, value in values.items():
                setattr(run, key, value)
            run.detail, run.updated_at = dict(self.detail), utcnow()
            session.add(run)
            session.commit()

    @staticmethod
    def cache() -> CallCache:
        """Every judge call is cached by its full request (never the key): a re-run costs nothing."""
        return CallCache(get_settings().data_dir / "llm-cache.sqlite3")

    def execute(self) -> str:
        with Session(self.engine) as session:
            run = session.get(JudgingRun, self.run_id)
            if run is None:
                return "missing"
            submission = session.get(Submission, run.submission_id)
            system = session.get(System, submission.system_id)
            items = attachments(session, submission.dataset_name)
            judges = {j.id: j for j in session.exec(select(Judge))}
            session.expunge_all()
        self.update(status="running", progress=0.0, error=None)
        try:
            dataset = installed_dataset(submission.dataset_name)
            responses = read_responses(self.storage, submission, dataset)
            for number, attachment in enumerate(items):
                step = f"{attachment.kind}:{attachment.label}"
                if attachment.kind == "function_metric":
                    self.detail[step] = self.function_metric(submission, dataset, responses, attachment.label)
                elif attachment.kind == "rubric":
                    judge = judges[attachment.judge_id]
                    self.detail[step] = self.rubric(submission, system, dataset, responses, attachment, judge)
                else:
                    self.detail[step] = self.pairwise(
                        submission, system, dataset, responses, judges[attachment.judge_id]
                    )
                self.update(progress=(number + 1) / len(items))
        except (EvaluationError, HubError) as exc:
            message = exc.describe() if isinstance(exc, EvaluationError) else exc.message
            self.update(status="failed", error=message[:ERROR_CHARS])
            return "failed"
        except Exception as exc:  # a bug: the run is marked, the admin can re-run
            log.exception("judging run %s crashed", self.run_id)
            self.update(status="failed", error=f"internal error: {type(exc).__name__}"[:ERROR_CHARS])
            return "failed"
        self.update(status="done", progress=1.0)
        return "done"

    def function_metric(self, submission: Submission, dataset, responses: list[str], name: str) -> dict[str, Any]:
        report = evaluate(dataset, responses, metrics=[name])
        added = 0
        with Session(self.engine) as session:
            existing = set(session.exec(select(Score.signature).where(Score.submission_id == submission.id)))
            for outcome in report.outcomes:
                result = outcome.result
                if result is None or result.signature in existing:
                    continue
                session.add(Score.of_result(submission.id, result))
                added += 1
            session.commit()
        return {"scores_added": added}

    def rubric(self, submission, system, dataset, responses, attachment: DatasetJudging, judge: Judge) -> dict:
        rubric = parse_attached_rubric(attachment.rubric_yaml or "")
        items = dataset_items(dataset, responses, source=("system", str(system.id)))
        if "reference" not in rubric.fields:
            items = [{k: v for k, v in item.items() if k != "reference"} for item in items]
        with self.cache() as cache:
            results = grade_items(rubric, items, ChatClient(endpoint_config(judge), cache=cache))
        errors = [c for r in results for c in r.criteria if c.status == "error"]
        if results and len(errors) == sum(len(r.criteria) for r in results):  # not one call answered: say why
            raise HubError(f"judge {judge.name!r}: every call failed, e.g. {errors[0].problem}")
        with Session(self.engine) as session:
            session.execute(
                delete(RubricGrade).where(
                    col(RubricGrade.submission_id) == submission.id, col(RubricGrade.attachment_id) == attachment.id
                )
            )
            for result in results:
                session.add(
                    RubricGrade(
                        submission_id=submission.id,
                        attachment_id=attachment.id,
                        judge_id=judge.id,
                        rubric=result.rubric,
                        signature=result.signature,
                        prompt_id=result.ids["prompt_id"],
                        score=result.score,
                        status=result.status,
                        criteria=[c.to_dict() for c in result.criteria],
                    )
                )
            session.commit()
        graded = [r for r in results if r.graded]
        return {"items": len(results), "graded": len(graded), "passed": sum(r.status == "PASSED" for r in graded)}

    def opponents(self, session: Session, submission: Submission) -> list[tuple[System, Submission]]:
        """The newest scored submission of each baseline and public system on the dataset, but this one's system."""
        query = (
            select(Submission, System)
            .join(System, col(System.id) == col(Submission.system_id))
            .where(
                Submission.dataset_name == submission.dataset_name,
                col(Submission.status).in_(RESULT_STATUSES),
                Submission.system_id != submission.system_id,
                or_(col(System.is_baseline), col(System.is_public)),
            )
            .order_by(col(Submission.id))
        )
        newest = {system.id: (system, other) for other, system in session.exec(query)}
        return list(newest.values())

    def pairwise(self, submission, system: System, dataset, responses, judge: Judge) -> dict[str, Any]:
        with Session(self.engine) as session:
            opponents = self.opponents(session, submission)
            judged = session.exec(
                select(JudgeJudgement.system_a_id, JudgeJudgement.system_b_id).where(
                    JudgeJudgement.judge_id == judge.id,
                    JudgeJudgement.dataset_name == dataset.name,
                    or_(col(JudgeJudgement.system_a_id) == system.id, col(JudgeJudgement.system_b_id) == system.id),
                )
            ).all()
            session.expunge_all()
        done = {a if b == system.id else b for a, b in judged}
        todo = [(s, sub) for s, sub in opponents if s.id not in done]
        if not todo:
            return {"pairs": 0, "opponents": 0}
        me = SystemRef(system.name, system.id)
        texts = {me: responses}
        for other, other_submission in todo:
            texts[SystemRef(other.name, other.id)] = read_responses(self.storage, other_submission, dataset)
        pairs = dataset_pairs(dataset, texts, baseline=me)
        identity = JudgeIdentity.for_endpoint(judge.base_url, judge.model, judge.template_version)
        with self.cache() as cache:
            client = ChatClient(endpoint_config(judge), cache=cache)
            rows, summary = judge_pairs(
                pairs, client.complete_many, judge=identity, template=get_template(judge.template_version)
            )
        with Session(self.engine) as session:
            for row in rows:
                session.add(
                    JudgeJudgement(
                        judge_id=judge.id,
                        rater=row["rater"],
                        dataset_name=row["dataset"],
                        dataset_fingerprint=row["dataset_fingerprint"],
                        prompt_id=row["prompt_id"],
                        system_a_id=row["system_a_id"],
                        system_b_id=row["system_b_id"],
                        item_kind=row["item_kind"],
                        outcome=row["outcome"],
                        auto_tie=row["auto_tie"],
                        order_ab=row["judge_order_ab"],
                        order_ba=row["judge_order_ba"],
                        consistent=row["judge_consistent"],
                        template=row["judge_template"],
                        tokens_a=row["response_a_tokens"],
                        tokens_b=row["response_b_tokens"],
                        answer_ab=row["judge_answer_ab"],
                        answer_ba=row["judge_answer_ba"],
                    )
                )
            session.commit()
        return {
            "pairs": summary.pairs,
            "opponents": len(todo),
            "inconsistent": summary.inconsistent,
            "ungraded": summary.ungraded,
            "calls": summary.calls,
        }


def run_judging(engine: Engine, storage: Storage, run_id: int) -> str:
    """Run one queued judging run; its final status (done or failed)."""
    return _Run(engine, storage, run_id).execute()
