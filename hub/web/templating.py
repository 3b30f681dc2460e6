"""Jinja2 templates (top-level templates/, autoescaped) and the one place that renders HTML errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"
STATIC = Path(__file__).resolve().parent.parent / "static"

templates = Jinja2Templates(directory=str(TEMPLATES))

# How a page names an offending form field or parameter (the JSON API keeps the field's own name in `field`).
FIELD_LABELS = {
    "system_a_id": "System A",
    "system_b_id": "System B",
    "submission_id": "Submission",
    "prompt_ids": "Prompt ids",
    "most_informative": "Most informative prompts",
    "known_answers": "Known answers",
    "max_raters": "Most raters",
    "judge_id": "Judge",
    "key_ref": "Key reference",
    "is_public": "Public",
    "paper_url": "Paper URL",
    "code_url": "Code URL",
    "weights_url": "Weights URL",
    "current_password": "Current password",
    "schema_text": "Schema",
    "schema_file": "Schema file",
}
FILE_FIELD_LABELS = {"responses": "Responses for", "loglik": "Log-likelihoods for"}
STUDY_SYSTEM_FIELD = re.compile(r"systems\.([0-9]{1,3})\.([a-z_]{1,40})")


def field_label(field: str | None) -> str:
    """`system_b_id` -> "System B", `responses[ncm]` -> "Responses for ncm", other names with spaces for underscores."""
    if not field:
        return ""
    if field in FIELD_LABELS:
        return FIELD_LABELS[field]
    if (system := STUDY_SYSTEM_FIELD.fullmatch(field)) is not None:  # an interactive study's system N
        return f"System {int(system.group(1)) + 1}: {field_label(system.group(2)).lower()}"
    kind, bracket, rest = field.partition("[")
    if bracket and rest.endswith("]") and kind in FILE_FIELD_LABELS:
        return f"{FILE_FIELD_LABELS[kind]} {rest[:-1]}"
    return field.replace("_", " ")


templates.env.filters["field_label"] = field_label


def render(request: Request, name: str, context: dict[str, Any] | None = None, status_code: int = 200):
    """Render a page; `viewer` (the logged-in user or None) is filled in by the routes' context."""
    return templates.TemplateResponse(request, name, context or {}, status_code=status_code)


def wants_html(request: Request) -> bool:
    """API paths and JSON clients get JSON errors; browsers get the error page."""
    if request.url.path.startswith("/api/") or request.url.path.endswith(".json"):
        return False
    return "text/html" in request.headers.get("accept", "")
