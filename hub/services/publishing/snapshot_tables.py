"""The tables of a published snapshot: what each holds, its columns' SQLite types, and where its rows come from.

The downloads' tables (`exports.ROWS`: systems, submissions, scores, responses, ratings, IRT fits, and the closed,
published interactive studies with their conversations and annotations) and, where the judging tables exist, the
public judge judgements, rubric grades and the judges behind them. Every source reads through one session and
yields rows in a fixed order (by id), so the same data gives the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import inspect as sa_inspect
from sqlmodel import Session, col, select

from hub.services.publishing import exports
from hub.services.studies import data_rows as study_rows
from hub.services.submissions.results import RESULT_STATUSES, finite
from hub.services.submissions.submissions import can_view
from hub.storage import Storage

Row = dict[str, Any]
RowSource = Callable[[Session, Storage], Iterator[Row]]

DESCRIPTIONS = {
    "systems": "One row per system with at least one public submission (public systems and baselines).",
    "submissions": "Public submissions: evaluated (or later) submissions of public systems and baselines.",
    "scores": "Every stored automatic score of a public submission, with the signature of its configuration.",
    "responses": "One row per (public submission, prompt): the system's response text.",
    "ratings": "Every human judgement of every public experiment; raters appear only as salted hashes.",
    "irt_systems": "The newest IRT fit of every dataset: one row per public system (ability, interval, rank).",
    "irt_pairs": "The newest IRT fit of every dataset: one row per pair of public systems (difference, p-values).",
    "irt_prompts": "The newest IRT fit of every dataset: one row per prompt (discrimination, rank).",
    "judges": "The LLM judges behind published judge judgements and rubric grades (never their endpoints or keys).",
    "judge_judgements": "Pairwise verdicts of LLM judges between public systems, both orders asked.",
    "rubric_grades": "Rubric grades of public submissions' responses by LLM judges, with per-criterion grades.",
    **study_rows.DESCRIPTIONS,
}

INTEGER = frozenset(
    {
        "id",
        "system_id",
        "submission_id",
        "rating_id",
        "experiment_id",
        "item_id",
        "system_a_id",
        "system_b_id",
        "task_id",
        "assignment_id",
        "fit_id",
        "rank",
        "rank_low",
        "rank_high",
        "tier",
        "judgements",
        "judge_id",
        "response_a_tokens",
        "response_b_tokens",
        "max_tokens",
        "study_id",
        "conversation_id",
        "message_id",
        "current_leaf_id",
        "schema_version",
        "handling_ms",
        "suggestion_id",
    }
)
REAL = frozenset(
    {
        "corpus",
        "seconds_on_task",
        "ability",
        "interval_low",
        "interval_high",
        "difference",
        "se",
        "p_value",
        "p_adjusted",
        "discrimination",
        "log_discrimination_se",
        "score",
        "temperature",
        "suggestion_confidence",
    }
)
BOOLEAN = frozenset(
    {"is_baseline", "higher_is_better", "auto_tie", "excluded", "held_out", "anchor", "significant", "judge_consistent"}
)
JSON_COLUMNS = frozenset(
    {"baseline_ids", "per_prompt", "details", "criteria"}
    | {"schemas", "systems", "assistance", "messages", "branches", "reverts"}  # interactive studies
)
INDEXED = (
    "system_id",
    "submission_id",
    "experiment_id",
    "dataset",
    "fit_id",
    "system_a_id",
    "system_b_id",
    "study_id",
    "conversation_id",
)


def column_type(name: str) -> str:
    """The declared SQLite type: INTEGER (booleans as 0/1), REAL or TEXT (JSON lists and objects as text)."""
    if name in INTEGER or name in BOOLEAN:
        return "INTEGER"
    return "REAL" if name in REAL else "TEXT"


def column_note(name: str) -> str:
    if name in BOOLEAN:
        return "0/1"
    if name in JSON_COLUMNS:
        return "JSON"
    return "ISO 8601, UTC" if name.endswith("_at") else ""


@dataclass(frozen=True)
class Table:
    name: str
    fields: tuple[str, ...]
    rows: RowSource

    @property
    def description(self) -> str:
        return DESCRIPTIONS.get(self.name, "")


# --- judging (another package's tables: published when they exist) --------------------------------------------------

JUDGE_FIELDS = ("id", "name", "model", "template_version", "temperature", "max_tokens", "created_at")
JUDGEMENT_FIELDS = (
    "rating_id",
    "judge_id",
    "dataset",
    "dataset_fingerprint",
    "prompt_id",
    "item_kind",
    "system_a",
    "system_b",
    "system_a_id",
    "system_b_id",
    "outcome",
    "auto_tie",
    "rater",
    "judge_order_ab",
    "judge_order_ba",
    "judge_consistent",
    "judge_template",
    "response_a_tokens",
    "response_b_tokens",
    "created_at",
)
GRADE_FIELDS = (
    "id",
    "submission_id",
    "system_id",
    "dataset",
    "judge_id",
    "rubric",
    "signature",
    "prompt_id",
    "score",
    "status",
    "criteria",
    "created_at",
)


def _judging():
    """The judging models and views, or None where they are not installed or their tables not migrated."""
    try:
        from hub.models import Judge, JudgeJudgement, RubricGrade
        from hub.services.judging import views
    except ImportError:
        return None
    return Judge, JudgeJudgement, RubricGrade, views


def _judge_judgements(session: Session, _storage: Storage) -> Iterator[Row]:
    judging = _judging()
    assert judging is not None
    _, JudgeJudgement, _, views = judging
    datasets = session.exec(select(JudgeJudgement.dataset_name).distinct().order_by(JudgeJudgement.dataset_name))
    for dataset in list(datasets):
        for row in views.judge_rows(session, dataset):  # only pairs of systems public now
            yield {name: row.get(name) for name in JUDGEMENT_FIELDS}


def _public_grades(session: Session) -> Iterator[tuple[Any, Any, Any]]:
    from hub.models import Submission, System

    judging = _judging()
    assert judging is not None
    RubricGrade = judging[2]
    query = (
        select(RubricGrade, Submission, System)
        .join(Submission, col(Submission.id) == col(RubricGrade.submission_id))
        .join(System, col(System.id) == col(Submission.system_id))
        .where(col(Submission.status).in_(RESULT_STATUSES))
        .order_by(col(RubricGrade.id))
        .execution_options(yield_per=exports.BATCH)
    )
    for grade, submission, system in session.exec(query):
        if can_view(submission, system, None):
            yield grade, submission, system


def _rubric_grades(session: Session, _storage: Storage) -> Iterator[Row]:
    for grade, submission, system in _public_grades(session):
        yield {
            "id": grade.id,
            "submission_id": submission.id,
            "system_id": system.id,
            "dataset": submission.dataset_name,
            "judge_id": grade.judge_id,
            "rubric": grade.rubric,
            "signature": grade.signature,
            "prompt_id": grade.prompt_id,
            "score": finite(grade.score),
            "status": grade.status,
            "criteria": grade.criteria,
            "created_at": grade.created_at.isoformat(),
        }


def _judges(session: Session, storage: Storage) -> Iterator[Row]:
    judging = _judging()
    assert judging is not None
    Judge = judging[0]
    used = {row["judge_id"] for row in _judge_judgements(session, storage)}
    used |= {grade.judge_id for grade, _, _ in _public_grades(session)}
    for judge in session.exec(select(Judge).order_by(col(Judge.id))):
        if judge.id in used:  # endpoint and key reference stay private
            yield {
                "id": judge.id,
                "name": judge.name,
                "model": judge.model,
                "template_version": judge.template_version,
                "temperature": judge.temperature,
                "max_tokens": judge.max_tokens,
                "created_at": judge.created_at.isoformat(),
            }


def tables(session: Session) -> list[Table]:
    """Every table of the snapshot, in the fixed order files and the SQLite file list them."""
    found = [Table(kind, exports.FIELDS[kind], exports.ROWS[kind]) for kind in exports.FIELDS]
    inspector = sa_inspect(session.connection())
    if _judging() is not None and all(inspector.has_table(t) for t in ("judge", "judgejudgement", "rubricgrade")):
        found += [
            Table("judges", JUDGE_FIELDS, _judges),
            Table("judge_judgements", JUDGEMENT_FIELDS, _judge_judgements),
            Table("rubric_grades", GRADE_FIELDS, _rubric_grades),
        ]
    return found
