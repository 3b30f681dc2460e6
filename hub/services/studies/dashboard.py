"""A study's dashboard as one view-model (served as the page and as JSON): label distributions per question (all
systems and per system), edit rate and edit size per system, where reversals happen, and agreement between
participants on the turns several of them annotated; the figures come from evaluation/chat_study_stats.py and
evaluation/label_agreement.py over the study's rows.

Agreement uses Krippendorff's alpha at the level each question kind has (binary and choice nominal, Likert ordinal
over its points, multi-select with the Jaccard distance between the sets chosen) and raw percent agreement, each with
a 95% percentile bootstrap interval over annotated turns (seed 0, recorded in the signature). Free text has none.
Answers given by an admin without a participant (testing) count in distributions but not in agreement.
The turns several participants annotated are those other participants reviewed (hub/services/studies/reviews.py:
a participant annotates another's finished conversation): their answers are ordinary answers here, from every arm
pooled (the assistance section compares arms; an assisted arm's answers may agree more because of the suggestion).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

from sqlmodel import Session

from evaluation.chat_study_stats import (
    MessageRow,
    RevertRow,
    edit_figures,
    label_distribution,
    reversal_summaries,
    reversals,
)
from evaluation.label_agreement import Level, label_agreement
from hub.models import User
from hub.services.studies import records as study_records
from hub.services.studies.assistance_report import assistance_report
from hub.services.studies.records import StudyRecords, answer_label

LEVELS: dict[str, Level] = {"binary": "nominal", "choice": "nominal", "likert": "ordinal", "multi": "set"}
BOOTSTRAP = 1000
SEED = 0


def _answers(data: StudyRecords) -> dict[str, list[tuple[int, int | None, Any, Any]]]:
    """Per current question: (message id, participant id, value, label) of every answer given under a schema version
    where the question had the same kind (and so comparable values)."""
    current = {q["id"]: q for q in data.current_questions()}
    found: dict[str, list[tuple[int, int | None, Any, Any]]] = defaultdict(list)
    for annotation in data.annotations:
        question = data.question(annotation.schema_version, annotation.question_id)
        wanted = current.get(annotation.question_id)
        if question is None or wanted is None or question["kind"] != wanted["kind"]:
            continue
        label: Any = answer_label(question, annotation.value)
        if question["kind"] == "multi":
            label = list(annotation.value) if isinstance(annotation.value, list) else None
        elif question["kind"] == "text":
            label = annotation.value
        found[annotation.question_id].append(
            (annotation.message_id, annotation.participant_id, annotation.value, label)
        )
    return found


VALID = {  # what each kind's stored value is (as the schema checks it); anything else takes no part in agreement
    "binary": lambda v: isinstance(v, bool),
    "likert": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
    "choice": lambda v: isinstance(v, str),
    "multi": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


def _agreement(question: dict[str, Any], answers: list[tuple[int, int | None, Any, Any]]) -> dict[str, Any] | None:
    level = LEVELS.get(question["kind"])
    if level is None:
        return None
    valid = VALID[question["kind"]]
    rated = [(m, p, v) for m, p, v, _ in answers if p is not None and valid(v)]
    values = [frozenset(v) if level == "set" else v for _, _, v in rated]
    categories = None
    if level == "ordinal":
        top = max([len(question["labels"]), *values])
        categories = list(range(1, top + 1))
    result = label_agreement(
        [m for m, _, _ in rated],
        [p for _, p, _ in rated],
        values,
        level=level,
        categories=categories,
        n_bootstrap=BOOTSTRAP,
        seed=SEED,
    )
    return result.to_dict()


def _chart(title: str, label: str, labels: list[str], values: list[float | None], **options: Any) -> dict[str, Any]:
    """A spec for hub/static/charts.js (horizontal bars)."""
    return {"title": title, "label": label, "labels": labels, "values": values, "kinds": ["public"] * len(labels)} | (
        options
    )


def _question_view(
    data: StudyRecords, question: dict[str, Any], answers: list[tuple[int, int | None, Any, Any]]
) -> dict[str, Any]:
    system_of_message = {
        m.id: data_chat.system_id for data_chat in data.chats for m in data.messages.get(data_chat.id, [])
    }
    labels = question["labels"]
    overall = label_distribution(question["id"], question["kind"], labels, [a[3] for a in answers])
    per_system = []
    for system_id, system in sorted(data.systems.items()):
        mine = [a[3] for a in answers if system_of_message.get(a[0]) == system_id]
        counts = label_distribution(question["id"], question["kind"], labels, mine)
        per_system.append({"system_id": system_id, "system": system.label, "answers": counts.answers, "counts": counts})
    rows = [
        {
            "label": count.label,
            "unknown": count.label in overall.unknown,
            "all": count,
            "systems": [next((c for c in s["counts"].counts if c.label == count.label), None) for s in per_system],
        }
        for count in overall.counts
    ]
    view = {
        "id": question["id"],
        "question": question["question"],
        "kind": question["kind"],
        "applies_to": question["applies_to"],
        "distribution": dataclasses.asdict(overall),
        "per_system": [{k: v for k, v in s.items() if k != "counts"} for s in per_system],
        "rows": [
            {
                **row,
                "all": dataclasses.asdict(row["all"]),
                "systems": [c and dataclasses.asdict(c) for c in row["systems"]],
            }
            for row in rows
        ],
        "agreement": _agreement(question, answers),
        "chart": None,
    }
    if overall.counts and overall.answers:
        view["chart"] = _chart(
            "Share of answers" + (" choosing each option" if question["kind"] == "multi" else ""),
            "Share of answers",
            [c.label for c in overall.counts],
            [c.share for c in overall.counts],
            percent=True,
            max=1,
            value_labels=True,
        )
    return view


def _message_rows(data: StudyRecords) -> list[MessageRow]:
    return [
        MessageRow(m.id or 0, m.chat_id, m.parent_id, m.role, m.content, m.edit_of_id, m.status)
        for messages in data.messages.values()
        for m in messages
    ]


def _edits_and_reversals(data: StudyRecords) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict]]:
    system_of_chat = {chat.id: chat.system_id for chat in data.chats if chat.id is not None}
    messages = _message_rows(data)
    labels = {system_id: system.label for system_id, system in data.systems.items()}
    edits = [
        {**dataclasses.asdict(f), "edit_rate": f.edit_rate, "system": labels.get(f.system_id)}
        for f in edit_figures(messages, system_of_chat, data.systems)
    ]
    reverts = [RevertRow(r.chat_id, r.from_leaf_id, r.to_message_id) for rs in data.reverts.values() for r in rs]
    found = reversals(messages, reverts)
    summaries = [
        {**dataclasses.asdict(s), "system": labels.get(s.system_id)}
        for s in reversal_summaries(found, system_of_chat, data.systems)
    ]
    return edits, summaries, [dataclasses.asdict(r) for r in found]


def dashboard(session: Session, viewer: User | None, study_id: int) -> dict[str, Any]:
    """The dashboard of a study an admin (any study) or anyone (a published one: participants' rows only) may read."""
    study = study_records.readable_study(session, viewer, study_id)
    data = study_records.load(session, study, public=not (viewer is not None and viewer.is_admin))
    answers = _answers(data)
    edits, reversal_rows, found = _edits_and_reversals(data)
    by_turn: dict[int, int] = defaultdict(int)
    for reversal in found:
        by_turn[reversal["turn"]] += 1
    all_messages = [m for messages in data.messages.values() for m in messages]
    return {
        "study": {
            "id": study.id,
            "title": study.title,
            "status": study.status,
            "public": bool(getattr(study, "public", False)),
            "schema_version": study.schema_version,
        },
        "counts": {
            # authors and reviewers (who may have annotated without writing a conversation of their own)
            "participants": len(
                {c.participant_id for c in data.chats if c.participant_id is not None}
                | {a.participant_id for a in data.annotations if a.participant_id is not None}
            ),
            "conversations": len(data.chats),
            "user_turns": sum(m.role == "user" for m in all_messages),
            "system_turns": sum(m.role == "assistant" and m.edit_of_id is None for m in all_messages),
            "post_edits": sum(m.edit_of_id is not None for m in all_messages),
            "reversals": len(found),
            "annotations": len(data.annotations),
        },
        "questions": [_question_view(data, q, answers.get(q["id"], [])) for q in data.current_questions()],
        "edits": edits,
        "edit_chart": _chart(
            "Share of system replies post-edited",
            "Edit rate",
            [e["system"] for e in edits],
            [e["edit_rate"] for e in edits],
            percent=True,
            max=1,
            value_labels=True,
        )
        if any(e["replies"] for e in edits)
        else None,
        "reversals": reversal_rows,
        "reversal_chart": _chart(
            "Reversals by the turn returned to",
            "Reversals",
            [f"turn {turn}" for turn in sorted(by_turn)],
            [by_turn[turn] for turn in sorted(by_turn)],
            integer=True,
        )
        if found
        else None,
        "assistance": assistance_report(session, study),  # engineer "milo"'s section (MILO's effects)
    }
