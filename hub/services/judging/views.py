"""What judging shows: leaderboard cells (rubric scores, judge win rates linking to report cards), the explanations
beside a profile's responses, each judge's report card per dataset, and the prediction-powered ranking (PPI++)
of a dataset with both human and judge judgements. Judge judgements are read from their own table only."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import quote

from sqlmodel import Session, col, select

from evaluation.errors import EvaluationError
from evaluation.judgements import from_records
from evaluation.judges.files import JudgeFile, JudgeRecord
from evaluation.judges.report import report_card
from evaluation.judges.run import JUDGE_BACKEND
from evaluation.pairwise_results import wilson_interval
from evaluation.ppi.items import paired_items
from evaluation.ppi.report import rank_report
from hub.errors import HubError
from hub.models import DatasetJudging, Judge, JudgeJudgement, RubricGrade, Submission, System
from hub.services.human.ratings_rows import ratings_rows
from hub.services.judging.registry import judge_json
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions.results import RESULT_STATUSES, read_responses
from hub.services.submissions.submissions import can_view
from hub.storage import get_storage

LEVEL = 0.95
MAX_PROFILE_ROWS = 1_000


def card_url(dataset: str, judge_id: int) -> str:
    return f"/judges/{quote(dataset, safe='')}#judge-{judge_id}"


def public_system_ids(session: Session, dataset: str) -> set[int]:
    """Systems anyone may see on the dataset (a published submission of a public system or a baseline)."""
    query = (  # what can_view reads of both, as columns (whole rows would decode every submission's stored lists)
        select(col(Submission.status), col(System.id), col(System.is_public), col(System.is_baseline))
        .join(System, col(System.id) == col(Submission.system_id))
        .where(Submission.dataset_name == dataset, col(Submission.status).in_(RESULT_STATUSES))
    )
    return {entry.id for entry in session.exec(query) if can_view(entry, entry, None)}


def _judgements(
    session: Session, dataset: str, judge_id: int | None = None, shown: set[int] | None = None
) -> list[JudgeJudgement]:
    """The dataset's judge judgements between systems in `shown` (default: the public ones)."""
    shown = public_system_ids(session, dataset) if shown is None else shown
    query = select(JudgeJudgement).where(JudgeJudgement.dataset_name == dataset).order_by(col(JudgeJudgement.id))
    if judge_id is not None:
        query = query.where(JudgeJudgement.judge_id == judge_id)
    return [r for r in session.exec(query) if r.system_a_id in shown and r.system_b_id in shown]


def leaderboard_cells(
    session: Session, dataset: str, submission_ids: list[int], system_ids: list[int]
) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]], list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """(rubric columns, rubric cells by submission id, judge columns, judge cells by system id).

    A rubric cell: mean score over graded responses, pass rate, graded/total. A judge cell: the system's win rate
    over every pair the judge graded with it (ties half), with a Wilson interval and the report card's URL."""
    rubric_columns: dict[str, dict[str, Any]] = {}
    rubric_cells: dict[int, dict[str, Any]] = defaultdict(dict)
    if submission_ids:
        grades: dict[tuple[int, str], list[RubricGrade]] = defaultdict(list)
        query = select(RubricGrade).where(col(RubricGrade.submission_id).in_(submission_ids))
        for grade in session.exec(query):
            grades[(grade.submission_id, grade.rubric)].append(grade)
        for (submission_id, rubric), rows in grades.items():
            key = f"rubric:{rubric}"
            rubric_columns.setdefault(
                key, {"key": key, "rubric": rubric, "signature": rows[0].signature, "higher_is_better": True}
            )
            graded = [r for r in rows if r.score is not None]
            rubric_cells[submission_id][key] = {
                "score": sum(r.score for r in graded) / len(graded) if graded else None,
                "pass_rate": sum(r.status == "PASSED" for r in graded) / len(graded) if graded else None,
                "graded": len(graded),
                "items": len(rows),
                "signature": rows[0].signature,
            }
    judge_columns: list[dict[str, Any]] = []
    judge_cells: dict[int, dict[str, Any]] = defaultdict(dict)
    judges = {j.id: j for j in session.exec(select(Judge))}
    wanted = set(system_ids)
    tallies: dict[tuple[int, int], list[float]] = defaultdict(list)
    for row in _judgements(session, dataset, shown=wanted | public_system_ids(session, dataset)):
        if row.outcome is None:
            continue
        value = {"A": 1.0, "B": 0.0, "tie": 0.5}[row.outcome]
        tallies[(row.judge_id, row.system_a_id)].append(value)
        tallies[(row.judge_id, row.system_b_id)].append(1.0 - value)
    for judge_id in sorted({j for j, _ in tallies}):
        key = f"judge:{judge_id}"
        judge_columns.append(
            {
                "key": key,
                "judge_id": judge_id,
                "judge": judges[judge_id].name,
                "card_url": card_url(dataset, judge_id),
                "higher_is_better": True,
            }
        )
    for (judge_id, system_id), values in tallies.items():
        if system_id not in wanted:
            continue
        wins = sum(values)
        interval = wilson_interval(round(wins), len(values), LEVEL)
        judge_cells[system_id][f"judge:{judge_id}"] = {
            "win_rate": wins / len(values),
            "n": len(values),
            "interval": list(interval) if interval else None,
            "card_url": card_url(dataset, judge_id),
        }
    return list(rubric_columns.values()), dict(rubric_cells), judge_columns, dict(judge_cells)


def explanations(session: Session, submission_id: int) -> dict[str, list[dict[str, Any]]]:
    """Per prompt id, each rubric's verdict on the response: score, status and the criteria with explanations."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    query = select(RubricGrade).where(RubricGrade.submission_id == submission_id).order_by(col(RubricGrade.id))
    for grade in session.exec(query):
        found[grade.prompt_id].append(
            {"rubric": grade.rubric, "score": grade.score, "status": grade.status, "criteria": grade.criteria}
        )
    return dict(found)


def profile_grades(session: Session, submission: Submission) -> list[dict[str, Any]]:
    """Each graded response of a submission with its rubric verdicts and the judge's explanations, prompt order."""
    found = explanations(session, submission.id)
    if not found:
        return []
    try:
        dataset = installed_dataset(submission.dataset_name)
        responses = read_responses(get_storage(), submission, dataset)
    except HubError:
        return []
    return [
        {"prompt_id": prompt.id, "response": response, "grades": found[prompt.id]}
        for prompt, response in zip(dataset.prompts, responses, strict=True)
        if prompt.id in found
    ][:MAX_PROFILE_ROWS]


def judge_rows(session: Session, dataset: str, judge_id: int | None = None) -> list[dict[str, Any]]:
    """The judge judgements in the ratings download's shape (`rater` the judge's identity, `backend` judge)."""
    names = {s.id: s.name for s in session.exec(select(System))}
    return [
        {
            "rating_id": row.id,
            "judge_id": row.judge_id,
            "dataset": row.dataset_name,
            "dataset_fingerprint": row.dataset_fingerprint,
            "prompt_id": row.prompt_id,
            "item_kind": row.item_kind,
            "system_a": names.get(row.system_a_id),
            "system_b": names.get(row.system_b_id),
            "system_a_id": row.system_a_id,
            "system_b_id": row.system_b_id,
            "left": None,
            "outcome": row.outcome,
            "auto_tie": row.auto_tie,
            "rater": row.rater,
            "backend": JUDGE_BACKEND,
            "excluded": False,
            "held_out": False,
            "judge_order_ab": row.order_ab,
            "judge_order_ba": row.order_ba,
            "judge_consistent": row.consistent,
            "judge_template": row.template,
            "response_a_tokens": row.tokens_a,
            "response_b_tokens": row.tokens_b,
            "created_at": row.created_at.isoformat(),
        }
        for row in _judgements(session, dataset, judge_id)
    ]


def _judge_file(rows: list[dict[str, Any]]) -> JudgeFile:
    records = tuple(
        JudgeRecord(
            dataset=r["dataset"],
            prompt_id=r["prompt_id"],
            system_a=str(r["system_a_id"]),
            system_b=str(r["system_b_id"]),
            name_a=r["system_a"] or str(r["system_a_id"]),
            name_b=r["system_b"] or str(r["system_b_id"]),
            outcome=r["outcome"],
            auto_tie=r["auto_tie"],
            order_ab=r["judge_order_ab"],
            order_ba=r["judge_order_ba"],
            tokens_a=r["response_a_tokens"],
            tokens_b=r["response_b_tokens"],
        )
        for r in rows
    )
    return JudgeFile(rater=rows[0]["rater"], keyed_by_id=True, records=records)


def _human_rows(session: Session, dataset: str) -> list[dict[str, Any]]:
    return [r for r in ratings_rows(session, dataset) if r["item_kind"] == "pair"]


def _dataset_judges(session: Session, dataset: str) -> list[Judge]:
    attached = select(DatasetJudging.judge_id).where(
        DatasetJudging.dataset_name == dataset, DatasetJudging.kind == "judge"
    )
    ids = set(session.exec(attached)) | set(
        session.exec(select(JudgeJudgement.judge_id).where(JudgeJudgement.dataset_name == dataset))
    )
    return [j for j in session.exec(select(Judge).where(col(Judge.id).in_(ids)).order_by(col(Judge.id)))]


def report_cards(session: Session, dataset: str) -> dict[str, Any]:
    """Each judge of the dataset with its report card against the public human judgements, or why there is none."""
    installed_dataset(dataset)
    human = _human_rows(session, dataset)
    cards = []
    for judge in _dataset_judges(session, dataset):
        rows = judge_rows(session, dataset, judge.id)
        entry: dict[str, Any] = {"judge": judge_json(judge), "judgements": len(rows), "card": None, "problem": None}
        entry["judge"].pop("key_set")
        if not rows:
            entry["problem"] = "the judge has not judged any pair of this dataset yet"
        elif not human:
            entry["problem"] = "no public human judgements on this dataset to compare with"
        else:
            try:
                entry["card"] = report_card(from_records(human), _judge_file(rows), dataset=dataset).to_dict()
            except EvaluationError as exc:
                entry["problem"] = exc.message
        cards.append(entry)
    return {"dataset": dataset, "level": LEVEL, "judges": cards}


def ppi_ranking(session: Session, dataset: str, judge_id: int | None = None) -> dict[str, Any]:
    """The PPI++ ranking of the dataset from its human judgements and one judge's (the first with judgements)."""
    installed_dataset(dataset)
    judges = _dataset_judges(session, dataset)
    if judge_id is not None:
        judges = [j for j in judges if j.id == judge_id]
    page: dict[str, Any] = {"dataset": dataset, "level": LEVEL, "judge": None, "report": None, "problem": None}
    human = _human_rows(session, dataset)
    rows: list[dict[str, Any]] = []
    for judge in judges:
        rows = judge_rows(session, dataset, judge.id)
        if rows:
            page["judge"] = {"id": judge.id, "name": judge.name, "card_url": card_url(dataset, judge.id)}
            break
    if not rows:
        page["problem"] = "no judge has judged pairs of this dataset yet"
    elif not human:
        page["problem"] = "no public human judgements on this dataset: PPI needs some"
    else:
        try:
            items = paired_items(from_records(human), from_records(rows))
            anchor = _anchor(session, items)
            page["report"] = rank_report(items, anchor, level=LEVEL).to_json()
        except EvaluationError as exc:
            page["problem"] = exc.message
    return page


def _anchor(session: Session, items) -> int:
    """A baseline if one is ranked (the first by id), else the first system."""
    ids = [items.system_id(i) for i in range(len(items.systems))]
    baselines = {s.id for s in session.exec(select(System).where(col(System.is_baseline)))}
    for index, system_id in enumerate(ids):
        if system_id in baselines:
            return index
    return 0
