"""Raters' free-text reasons for their judgements (MILO's QA of human work): the experiment's option (off,
optional, required), checking what a rater typed, and storing it with the ratings. Reasons are private: only admins
read them (the QA page), and no public download or snapshot includes them."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlmodel import Session

from hub.errors import UnprocessableInput
from hub.models import Assignment, Experiment, ExperimentItem, RatingReason

REASON_MODES = ("off", "optional", "required")
MAX_REASON_CHARS = 1_000
SETTINGS_KEY = "reasons"


def reason_mode(experiment: Experiment) -> str:
    """off (no reason asked), optional or required; experiments made before the option are off."""
    mode = (experiment.settings or {}).get(SETTINGS_KEY, "off")
    return mode if mode in REASON_MODES else "off"


def reasons_from_form(form: Iterable[tuple[str, Any]]) -> dict[int, str]:
    """`reason_<item id>` fields of a rating form; a malformed item id is refused, naming the field."""
    reasons: dict[int, str] = {}
    for name, value in form:
        if not name.startswith("reason_"):
            continue
        raw = name.removeprefix("reason_")
        if not raw.isdigit() or len(raw) > 18:
            raise UnprocessableInput(f"{name!r} does not name a pair of this task", field=name)
        reasons[int(raw)] = str(value)
    return reasons


def _checked_text(text: Any, field: str) -> str:
    if not isinstance(text, str):
        raise UnprocessableInput("a reason is text", field=field)
    text = text.strip()
    if len(text) > MAX_REASON_CHARS:
        raise UnprocessableInput(f"a reason is at most {MAX_REASON_CHARS} characters, not {len(text)}", field=field)
    bad = next((c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cs")), None)
    if bad is not None:
        raise UnprocessableInput(f"a reason cannot contain the control character U+{ord(bad):04X}", field=field)
    return text


def checked_reasons(
    experiment: Experiment, items: list[ExperimentItem], reasons: Mapping[int, Any] | None
) -> dict[int, str]:
    """The non-empty reasons to store, by item id: bounded text on items of this task; every item needs one when
    the experiment requires them; none may be sent when the experiment asks for none."""
    mode, reasons = reason_mode(experiment), dict(reasons or {})
    ids = {item.id for item in items}
    forged = sorted(set(reasons) - ids)
    if forged:
        raise UnprocessableInput(f"item {forged[0]} is not part of this task", field=f"reason_{forged[0]}")
    checked = {item_id: _checked_text(text, f"reason_{item_id}") for item_id, text in reasons.items()}
    checked = {item_id: text for item_id, text in checked.items() if text}
    if mode == "off" and checked:
        first = min(checked)
        raise UnprocessableInput("this study asks for no reasons", field=f"reason_{first}")
    if mode == "required":
        missing = [item.id for item in items if item.id not in checked]
        if missing:
            raise UnprocessableInput(
                f"{len(missing)} pair(s) without a reason, first item {missing[0]}", field=f"reason_{missing[0]}"
            )
    return checked


def add_reasons(session: Session, assignment: Assignment, reasons: Mapping[int, str], now: datetime) -> None:
    """Add the checked reasons to the session, in the transaction that stores the ratings."""
    assert assignment.id is not None
    for item_id, text in reasons.items():
        session.add(
            RatingReason(
                experiment_id=assignment.experiment_id,
                assignment_id=assignment.id,
                item_id=item_id,
                rater_id=assignment.rater_id,
                text=text,
                created_at=now,
            )
        )
