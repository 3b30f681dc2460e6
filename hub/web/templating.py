"""Jinja2 templates (top-level templates/, autoescaped) and the one place that renders HTML errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"
STATIC = Path(__file__).resolve().parent.parent / "static"

templates = Jinja2Templates(directory=str(TEMPLATES))


def render(request: Request, name: str, context: dict[str, Any] | None = None, status_code: int = 200):
    """Render a page; `viewer` (the logged-in user or None) is filled in by the routes' context."""
    return templates.TemplateResponse(request, name, context or {}, status_code=status_code)


def wants_html(request: Request) -> bool:
    """API paths and JSON clients get JSON errors; browsers get the error page."""
    if request.url.path.startswith("/api/") or request.url.path.endswith(".json"):
        return False
    return "text/html" in request.headers.get("accept", "")
