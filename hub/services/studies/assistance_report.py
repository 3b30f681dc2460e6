"""The study dashboard's assistance section (MILO): the effect of pre-annotation (assisted arm) and of the drafting
assistant (real-time arm), each against the unassisted arm, on handling time per annotation, agreement with the
unassisted participants and the share of answers equal to the judge's suggestion (over-reliance), with intervals,
the one-sided test and counts per arm; and how much of the real-time drafts participants kept. The statistics are
evaluation.assistance_effect's; this module reads the study's rows and words the result.

Every participant's answers count: about their own conversations and about the conversations they reviewed
(hub/services/studies/reviews.py), which is what makes agreement with other participants estimable. Each answer is
counted in the arm its annotator was exposed to (reviews.annotator_arm): the annotator's own arm under participant
randomisation, the conversation's under conversation randomisation. Admins' answers never count."""

from __future__ import annotations

import math
from typing import Any

from sqlmodel import Session, col, select

from evaluation.assistance_effect import ARMS, assistance_effects, mean_interval
from evaluation.errors import InvalidInputError
from hub.models import (
    AnnotationSuggestion,
    Chat,
    ChatAnnotation,
    ChatMessage,
    DraftRequest,
    Study,
    StudyParticipant,
    StudySchema,
)
from hub.services.studies.assistance import study_judge
from hub.services.studies.assistance_prompts import SUGGESTED_KINDS
from hub.services.studies.reviews import annotator_arm

OUTCOMES = (
    ("log_time", "Handling time per annotation", "less"),
    ("agreement", "Agreement with unassisted participants", "greater"),
    ("equals_suggestion", "Answers equal to the judge's suggestion", "greater"),
)
ARM_LABELS = {"assisted": "Pre-annotation shown", "realtime": "Drafting assistant"}


def _question_kinds(session: Session, study_id: int) -> dict[tuple[int, str], str]:
    """(schema version, question id) -> kind, over every version of the study's schema."""
    kinds: dict[tuple[int, str], str] = {}
    for version in session.exec(select(StudySchema).where(StudySchema.study_id == study_id)):
        for question in version.definition.get("questions", []):
            kinds[(version.version, question["id"])] = question["kind"]
    return kinds


def _records(session: Session, study: Study, judge_id: int | None) -> dict[str, list[Any]]:
    found = session.exec(
        select(ChatAnnotation, Chat, StudyParticipant)
        .join(ChatMessage, col(ChatMessage.id) == ChatAnnotation.message_id)
        .join(Chat, col(Chat.id) == ChatMessage.chat_id)
        .join(StudyParticipant, col(StudyParticipant.id) == ChatAnnotation.participant_id)
        # participants' own conversations and those they reviewed, each answer in the arm its annotator was exposed to
        .where(Chat.study_id == study.id)
        .order_by(col(ChatAnnotation.id))
    ).all()
    rows = [(a, chat, arm) for a, chat, p in found if (arm := annotator_arm(study, chat, p)) in ARMS]
    suggestions: dict[tuple[int, str], Any] = {}
    if judge_id is not None and rows:
        query = select(AnnotationSuggestion).where(
            AnnotationSuggestion.judge_id == judge_id,
            col(AnnotationSuggestion.message_id).in_({a.message_id for a, _, _ in rows}),
            col(AnnotationSuggestion.error).is_(None),
        )
        suggestions = {(s.message_id, s.question_id): s.value for s in session.exec(query)}
    kinds = _question_kinds(session, study.id or 0)
    records: dict[str, list[Any]] = {key: [] for key in ("participants", "conversations", "arms", "items")}
    records.update(answers=[], suggestions=[], handling_ms=[], categorical=[])
    for annotation, chat, arm in rows:
        records["participants"].append(annotation.participant_id)
        records["conversations"].append(chat.id)
        records["arms"].append(arm)
        records["items"].append((annotation.message_id, annotation.question_id))
        records["answers"].append(annotation.value)
        records["suggestions"].append(suggestions.get((annotation.message_id, annotation.question_id)))
        records["handling_ms"].append(annotation.handling_ms if annotation.handling_ms else None)
        kind = kinds.get((annotation.schema_version, annotation.question_id), "text")
        records["categorical"].append(kind in SUGGESTED_KINDS)
    return records


def _counts(records: dict[str, list[Any]]) -> list[dict[str, Any]]:
    result = []
    for arm in ARMS:
        rows = [i for i, a in enumerate(records["arms"]) if a == arm]
        result.append(
            {
                "arm": arm,
                "participants": len({records["participants"][i] for i in rows}),
                "conversations": len({records["conversations"][i] for i in rows}),
                "annotations": len(rows),
                "timed": sum(records["handling_ms"][i] is not None for i in rows),
                "with_suggestion": sum(records["suggestions"][i] is not None for i in rows),
            }
        )
    return result


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "%":
        return f"{100 * value:+.1f} pts"
    if unit == "ratio":
        return f"{100 * (value - 1):+.1f}%"
    return f"{value:+.2f}"


def _row(key: str, label: str, effect: dict[str, Any], ratio: dict[str, float] | None) -> dict[str, Any]:
    unit = "ratio" if key == "log_time" else "%"
    values = ratio if key == "log_time" else effect
    estimated = effect["estimate"] is not None and values is not None
    row: dict[str, Any] = {
        "outcome": key,
        "label": label,
        "estimated": estimated,
        "note": effect["note"],
        "units": f"{effect['units_treatment']} vs {effect['units_control']}",
        "annotations": f"{effect['annotations_treatment']} vs {effect['annotations_control']}",
        "effect": effect,
    }
    if estimated:
        assert values is not None
        row["estimate"] = _number(values["estimate"], unit)
        row["interval"] = f"{_number(values['low'], unit)} to {_number(values['high'], unit)}"
        row["p_one_sided"] = f"{effect['p_one_sided']:.3g}"
        row["direction"] = "shorter" if key == "log_time" else "higher"
    if key == "log_time" and effect["mean_treatment"] is not None:
        row["detail"] = (
            f"geometric mean {math.exp(effect['mean_treatment']):.1f} s vs {math.exp(effect['mean_control']):.1f} s"
        )
    if key == "agreement" and estimated:
        row["detail"] = "jackknife over participants: a conservative interval and test"
    if key == "agreement" and not effect["annotations_treatment"] + effect["annotations_control"]:
        row["note"] = "no turn has categorical answers of an unassisted participant and someone else yet"
    return row


def _drafts(session: Session, study_id: int) -> dict[str, Any]:
    drafts = session.exec(
        select(DraftRequest).join(Chat, col(Chat.id) == DraftRequest.chat_id).where(Chat.study_id == study_id)
    ).all()
    used = [d for d in drafts if d.kept_fraction is not None]
    kept = mean_interval([d.kept_fraction for d in used], [d.participant_id for d in used])  # type: ignore[misc]
    latencies = sorted(d.latency_ms for d in drafts if d.latency_ms is not None and d.error is None)
    return {
        "requests": len(drafts),
        "failed": sum(d.error is not None for d in drafts),
        "used": len(used),
        "by_purpose": {p: sum(d.purpose == p for d in drafts) for p in ("free_text", "post_edit")},
        "kept": kept,
        "median_latency_ms": latencies[len(latencies) // 2] if latencies else None,
    }


def assistance_report(session: Session, study: Study) -> dict[str, Any] | None:
    """The dashboard's assistance section, or None for a study without assistance."""
    settings = study.assistance or {}
    if settings.get("mode", "none") == "none":
        return None
    judge = study_judge(session, study)
    records = _records(session, study, judge.id if judge else None)
    conversations = records["conversations"] if settings.get("randomise") == "conversation" else None
    fields = {k: v for k, v in records.items() if k != "conversations"}
    try:
        report = assistance_effects(**fields, conversations=conversations)
    except InvalidInputError as exc:  # e.g. a participant's conversations in two arms under participant randomisation
        report = assistance_effects(**{k: [] for k in fields})
        report["problem"] = exc.message
    arms = []
    for arm in ("assisted", "realtime"):
        if arm not in (settings.get("arms") or []):
            continue
        effects = report[arm]
        rows = [_row(key, label, effects[key], effects["time_ratio"]) for key, label, _ in OUTCOMES]
        if arm == "realtime":  # no suggestion is shown there: over-reliance is the assisted arm's question
            rows = rows[:2]
        arms.append({"arm": arm, "label": ARM_LABELS[arm], "rows": rows})
    suggestions = session.exec(
        select(AnnotationSuggestion.error)
        .join(ChatMessage, col(ChatMessage.id) == AnnotationSuggestion.message_id)
        .join(Chat, col(Chat.id) == ChatMessage.chat_id)
        .where(Chat.study_id == study.id)
    ).all()
    return {
        "judge": {"id": judge.id, "name": judge.name} if judge else None,
        "randomise": settings.get("randomise", "participant"),
        "seed": settings.get("seed"),
        "design": report["design"],
        "problem": report.get("problem"),
        "level": report["level"],
        "counts": _counts(records),
        "arms": arms,
        "suggestions": {"stored": len(suggestions), "failed": sum(e is not None for e in suggestions)},
        "drafts": _drafts(session, study.id or 0),
        "method": (
            "Each participant's mean (of log handling time, agreement, equality with the suggestion) is one unit, "
            "as participants were randomised; Welch's t interval and a one-sided t-test against the unassisted arm "
            "(by conversation: paired over participants). MILO reported the same test on 1,187 jobs."
        ),
    }
