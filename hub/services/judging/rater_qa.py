"""MILO's QA of human work: a rubric (the shipped milo-qa or a pasted YAML), graded by a registered judge, over
the free-text reasons raters gave in one experiment, run as the `rater_qa` job (each reason PASSED/REDO with the
judge's explanations); an admin's own PASSED/REDO grades on a sample; and the judge's agreement with them (share
agreeing with a Wilson interval, Cohen's kappa: the judge report card's helpers). Reasons stay private to admins."""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine, delete
from sqlmodel import Session, col, select

from evaluation.agreement import weighted_cohen_kappa
from evaluation.errors import EvaluationError
from evaluation.judges.report import Proportion
from evaluation.llm.cache import CallCache
from evaluation.llm.client import ChatClient
from evaluation.rubrics import Rubric, grade_items, shipped_rubrics
from hub import queue
from hub.errors import Conflict, Forbidden, HubError, NotFound, QueueUnavailable, UnprocessableInput
from hub.models import (
    Experiment,
    ExperimentItem,
    Judge,
    RaterQaAdminGrade,
    RaterQaGrade,
    RaterQaRun,
    Rating,
    RatingReason,
    User,
)
from hub.models.common import utcnow
from hub.services.human import rating_reasons
from hub.services.judging.registry import MAX_RUBRIC_CHARS, endpoint_config, get_judge, parse_attached_rubric
from hub.services.platform import audit
from hub.settings import get_settings

log = logging.getLogger(__name__)
ERROR_CHARS = 1_000
LEVEL = 0.95
QA_FIELDS = {"context", "response", "reference"}
CHOICE_WORDS = {
    "left": "Reply 1 is better",
    "right": "Reply 2 is better",
    "tie": "a tie",
    "both_good": "both are good",
    "both_bad": "both are bad",
}
SIGNATURE = f"rater-qa-agreement|v1|labels=PASSED/REDO|kappa=cohen-unweighted|ci=wilson|level={LEVEL}"


class QaRunForm(BaseModel):
    """What an admin starts: a registered judge and a rubric, shipped (by name) or pasted (YAML text)."""

    model_config = ConfigDict(extra="forbid")

    judge_id: int = Field(ge=1, le=2**31 - 1)
    rubric: str = Field(default="milo-qa", max_length=120, description="A shipped rubric's name, unless rubric_yaml.")
    rubric_yaml: str | None = Field(default=None, max_length=MAX_RUBRIC_CHARS)


class AdminGradeForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason_id: int = Field(ge=1, le=2**63 - 1)
    status: Literal["PASSED", "REDO"]


class ReasonModeForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reasons: Literal["off", "optional", "required"]


def _admin(user: User) -> None:
    if not user.is_admin:
        raise Forbidden("only admins can review raters' reasons")


def _experiment(session: Session, experiment_id: int) -> Experiment:
    experiment = session.get(Experiment, experiment_id)
    if experiment is None:
        raise NotFound(f"no experiment #{experiment_id}")
    return experiment


def set_reason_mode(session: Session, admin: User, experiment_id: int, form: ReasonModeForm) -> Experiment:
    """Ask this experiment's raters for a reason with each judgement (off, optional, required) from now on."""
    _admin(admin)
    experiment = _experiment(session, experiment_id)
    experiment.settings = {**(experiment.settings or {}), rating_reasons.SETTINGS_KEY: form.reasons}
    session.add(experiment)
    session.commit()
    audit.record(
        session,
        actor=admin,
        action="set_reason_mode",
        target=f"experiment #{experiment_id}",
        detail={"reasons": form.reasons},
    )
    session.refresh(experiment)
    return experiment


def qa_rubric(form: QaRunForm) -> tuple[Rubric, str]:
    """The rubric and its YAML text; it may show the judge only `context`, `response` (the reason), `reference`."""
    if form.rubric_yaml:
        text = form.rubric_yaml
        rubric = parse_attached_rubric(text)
    else:
        shipped = shipped_rubrics()
        if form.rubric not in shipped:
            raise UnprocessableInput(
                f"no shipped rubric {form.rubric!r} (shipped: {', '.join(shipped)})", field="rubric"
            )
        text = shipped[form.rubric].read_text(encoding="utf-8")
        rubric = parse_attached_rubric(text)
    unknown = sorted(set(rubric.fields) - QA_FIELDS)
    if unknown or "response" not in rubric.fields:
        raise UnprocessableInput(
            "a QA rubric grades the reason as `response` and may also show `context` and `reference`"
            + (f"; unknown: {', '.join(unknown)}" if unknown else ""),
            field="rubric_yaml" if form.rubric_yaml else "rubric",
        )
    return rubric, text


def run_json(run: RaterQaRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "experiment_id": run.experiment_id,
        "judge_id": run.judge_id,
        "rubric": run.rubric,
        "status": run.status,
        "progress": run.progress,
        "detail": run.detail,
        "error": run.error,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
    }


def request_run(session: Session, admin: User, experiment_id: int, form: QaRunForm) -> RaterQaRun:
    """Queue a QA run over every reason of the experiment (503 when the queue is down: the run is marked failed)."""
    _admin(admin)
    _experiment(session, experiment_id)
    get_judge(session, form.judge_id)
    rubric, text = qa_rubric(form)
    if session.exec(select(RatingReason.id).where(RatingReason.experiment_id == experiment_id)).first() is None:
        raise Conflict(f"experiment #{experiment_id} has no raters' reasons yet")
    run = RaterQaRun(
        experiment_id=experiment_id,
        judge_id=form.judge_id,
        rubric=f"{rubric.id}@{rubric.version}",
        rubric_yaml=text,
        created_by_id=admin.id,
    )
    session.add(run)
    session.commit()
    session.refresh(run)
    audit.record(
        session,
        actor=admin,
        action="request_rater_qa",
        target=f"experiment #{experiment_id}",
        detail={"run": run.id, "judge_id": form.judge_id, "rubric": run.rubric},
    )
    try:
        queue.enqueue(queue.RATER_QA, run.id)
    except QueueUnavailable as exc:
        run.status, run.error = "failed", f"{exc.message}; start it again"
        session.add(run)
        session.commit()
        raise
    return run


def reason_rows(session: Session, experiment_id: int) -> list[tuple[RatingReason, ExperimentItem, str | None]]:
    """Every reason of the experiment with the pair it explains and the rater's choice, by reason id."""
    query = (
        select(RatingReason, ExperimentItem, Rating.choice)
        .join(ExperimentItem, col(ExperimentItem.id) == col(RatingReason.item_id))
        .join(
            Rating,
            (col(Rating.assignment_id) == col(RatingReason.assignment_id))
            & (col(Rating.item_id) == col(RatingReason.item_id)),
        )
        .where(RatingReason.experiment_id == experiment_id)
        .order_by(col(RatingReason.id))
    )
    return [(reason, item, choice) for reason, item, choice in session.exec(query)]


def qa_item(reason: RatingReason, item: ExperimentItem, choice: str | None, fields: tuple[str, ...]) -> dict:
    """What the judge sees: the conversation, both replies and the rater's choice as `context`, the reason as
    `response`, the reply the rater preferred as `reference`; ids: reason, rater, prompt."""
    conversation = "\n".join(f"{turn.get('role', '?')}: {turn.get('content', '')}" for turn in item.context)
    chose = CHOICE_WORDS.get(choice or "", choice or "no answer")
    context = f"{conversation}\n\nReply 1: {item.left_text}\nReply 2: {item.right_text}\n\nThe rater chose: {chose}."
    preferred = {"left": item.left_text, "right": item.right_text}.get(choice or "", "(neither reply preferred)")
    texts = {"context": context, "response": reason.text, "reference": preferred}
    ids = {"reason_id": str(reason.id), "rater": str(reason.rater_id), "prompt_id": item.prompt_id}
    return {**ids, **{name: texts[name] for name in fields}}


class _QaRun:
    def __init__(self, engine: Engine, run_id: int):
        self.engine, self.run_id = engine, run_id

    def update(self, **values: Any) -> None:
        with Session(self.engine) as session:
            run = session.get(RaterQaRun, self.run_id)
            assert run is not None
            for key, value in values.items():
                setattr(run, key, value)
            run.updated_at = utcnow()
            session.add(run)
            session.commit()

    def execute(self) -> str:
        with Session(self.engine) as session:
            run = session.get(RaterQaRun, self.run_id)
            if run is None:
                return "missing"
            judge = session.get(Judge, run.judge_id)
            rows = reason_rows(session, run.experiment_id)
            session.expunge_all()
        self.update(status="running", progress=0.0, error=None)
        try:
            if judge is None:
                raise HubError(f"judge #{run.judge_id} is gone")
            rubric = parse_attached_rubric(run.rubric_yaml)
            items = [qa_item(reason, item, choice, rubric.fields) for reason, item, choice in rows]
            results = self.grade(rubric, items, judge)
            self.store(results)
        except (EvaluationError, HubError) as exc:
            message = exc.describe() if isinstance(exc, EvaluationError) else exc.message
            self.update(status="failed", error=message[:ERROR_CHARS])
            return "failed"
        except Exception as exc:  # a bug: the run is marked, the admin can start another
            log.exception("rater QA run %s crashed", self.run_id)
            self.update(status="failed", error=f"internal error: {type(exc).__name__}"[:ERROR_CHARS])
            return "failed"
        graded = [r for r in results if r.graded]
        detail = {"reasons": len(results), "graded": len(graded), "passed": sum(r.status == "PASSED" for r in graded)}
        self.update(status="done", progress=1.0, detail=detail)
        return "done"

    def grade(self, rubric: Rubric, items: list[dict], judge: Judge) -> list:
        def progress(done: int, total: int) -> None:
            self.update(progress=round(done / total, 4) if total else 1.0)

        with CallCache(get_settings().data_dir / "llm-cache.sqlite3") as cache:  # the judging runs' cache
            results = grade_items(rubric, items, ChatClient(endpoint_config(judge), cache=cache), progress=progress)
        errors = [c for r in results for c in r.criteria if c.status == "error"]
        if results and len(errors) == sum(len(r.criteria) for r in results):  # not one call answered: say why
            raise HubError(f"judge {judge.name!r}: every call failed, e.g. {errors[0].problem}")
        return results

    def store(self, results: list) -> None:
        with Session(self.engine) as session:
            session.execute(delete(RaterQaGrade).where(col(RaterQaGrade.run_id) == self.run_id))
            for result in results:
                session.add(
                    RaterQaGrade(
                        run_id=self.run_id,
                        reason_id=int(result.ids["reason_id"]),
                        score=result.score,
                        status=result.status,
                        criteria=[c.to_dict() for c in result.criteria],
                    )
                )
            session.commit()


def run_rater_qa(engine: Engine, run_id: int) -> str:
    """Run one queued QA run; its final status (done or failed)."""
    return _QaRun(engine, run_id).execute()


def grade_reason(session: Session, admin: User, experiment_id: int, form: AdminGradeForm) -> RaterQaAdminGrade:
    """An admin's own PASSED/REDO on one reason of the experiment (grading it again replaces it)."""
    _admin(admin)
    reason = session.get(RatingReason, form.reason_id)
    if reason is None or reason.experiment_id != experiment_id:
        raise NotFound(f"no reason #{form.reason_id} in experiment #{experiment_id}", field="reason_id")
    assert admin.id is not None
    grade = session.exec(select(RaterQaAdminGrade).where(RaterQaAdminGrade.reason_id == form.reason_id)).first()
    if grade is None:
        grade = RaterQaAdminGrade(reason_id=form.reason_id, admin_id=admin.id, status=form.status)
    grade.status, grade.admin_id, grade.created_at = form.status, admin.id, utcnow()
    session.add(grade)
    session.commit()
    session.refresh(grade)
    return grade


def agreement(pairs: list[tuple[str, str]], level: float = LEVEL) -> dict[str, Any]:
    """The judge's agreement with the admin over (judge, admin) PASSED/REDO pairs: the share agreeing with a
    Wilson interval, Cohen's kappa (unweighted) and the 2x2 table (rows: judge, columns: admin)."""
    code = {"PASSED": "A", "REDO": "B"}
    judge_labels, admin_labels = [code[j] for j, _ in pairs], [code[a] for _, a in pairs]
    agree = sum(j == a for j, a in pairs)
    table = {j: {a: sum(p == (j, a) for p in pairs) for a in code} for j in code}
    return {
        "signature": SIGNATURE,
        "n": len(pairs),
        "agreement": Proportion.of(agree, len(pairs), level).__dict__,
        "cohen_kappa": weighted_cohen_kappa(judge_labels, admin_labels, weights=None) if pairs else None,
        "table": table,
    }


def _sample_key(experiment_id: int, reason_id: int) -> str:
    """A fixed pseudo-random order: the first reasons shown form a random sample for the admin to grade."""
    return hashlib.sha256(f"rater-qa:{experiment_id}:{reason_id}".encode()).hexdigest()


def latest_run(session: Session, experiment_id: int) -> RaterQaRun | None:
    query = select(RaterQaRun).where(RaterQaRun.experiment_id == experiment_id).order_by(col(RaterQaRun.id).desc())
    return session.exec(query).first()


def qa_view(session: Session, admin: User, experiment_id: int, *, run_id: int | None = None, limit: int = 50) -> dict:
    """The QA page's data: the experiment's runs, its reasons in sample order (the first `limit`) with the chosen
    run's grades (the newest by default) and the admin's, and the judge's agreement over every reason both graded."""
    _admin(admin)
    experiment = _experiment(session, experiment_id)
    runs = list(
        session.exec(
            select(RaterQaRun).where(RaterQaRun.experiment_id == experiment_id).order_by(col(RaterQaRun.id).desc())
        )
    )
    run = next((r for r in runs if r.id == run_id), None) if run_id is not None else (runs[0] if runs else None)
    if run_id is not None and run is None:
        raise NotFound(f"no QA run #{run_id} of experiment #{experiment_id}", field="run")
    judged: dict[int, RaterQaGrade] = {}
    if run is not None:
        judged = {g.reason_id: g for g in session.exec(select(RaterQaGrade).where(RaterQaGrade.run_id == run.id))}
    ids = select(RatingReason.id).where(RatingReason.experiment_id == experiment_id)
    admin_grades = {
        g.reason_id: g.status
        for g in session.exec(select(RaterQaAdminGrade).where(col(RaterQaAdminGrade.reason_id).in_(ids)))
    }
    rows = sorted(reason_rows(session, experiment_id), key=lambda row: _sample_key(experiment_id, row[0].id or 0))
    pairs = [
        (str(judged[rid].status), status)
        for rid, status in admin_grades.items()
        if rid in judged and judged[rid].status
    ]
    shown = []
    for reason, item, choice in rows[:limit]:
        grade = judged.get(reason.id or 0)
        shown.append(
            {
                "reason_id": reason.id,
                "rater_id": reason.rater_id,
                "prompt_id": item.prompt_id,
                "choice": choice,
                "reason": reason.text,
                "judge": None
                if grade is None
                else {"status": grade.status, "score": grade.score, "criteria": grade.criteria},
                "admin": admin_grades.get(reason.id or 0),
            }
        )
    return {
        "experiment_id": experiment.id,
        "reasons_mode": rating_reasons.reason_mode(experiment),
        "reasons": len(rows),
        "admin_graded": len(admin_grades),
        "runs": [run_json(r) for r in runs],
        "run": run_json(run) if run is not None else None,
        "agreement": agreement(pairs),
        "rows": shown,
    }
