"""Statistics pages, twins of `/api/irt/{dataset}` and `/api/datasets/{name}/prompts/{id}`: a dataset's IRT fit
(abilities, significant differences, prompt discrimination) and one prompt's page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from hub.services.publishing import comparison
from hub.services.statistics import irt_views
from hub.storage import get_storage
from hub.web.deps import SessionDep, ViewerDep
from hub.web.read_cache import public_page
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False, default_response_class=HTMLResponse
)


def prompt_url(dataset: str, prompt_id: str) -> str:
    return f"/datasets/{quote(dataset, safe='')}/prompts/{quote(prompt_id, safe='')}"


def _ability_chart(fit: dict[str, Any]) -> dict[str, Any]:
    """Abilities in rank order with their bootstrap intervals as whiskers (the anchor sits at 0)."""
    systems = fit["systems"]
    return {
        "title": f"IRT ability on {fit['dataset']} (0 = {fit['anchor']}; whiskers: 95% bootstrap interval)",
        "label": "ability",
        "labels": [row["label"] for row in systems],
        "values": [row["ability"] for row in systems],
        "kinds": ["baseline" if row["is_baseline"] else "public" for row in systems],
        "errors": [row["interval"] for row in systems],
        "reference": 0,
    }


def _with_links(dataset: str, prompts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**row, "url": prompt_url(dataset, row["prompt"])} for row in prompts]


@router.get("/irt/{dataset}")
@public_page("irt")
def irt_page(request: Request, dataset: str, session: SessionDep, viewer: ViewerDep):
    page = irt_views.dataset_irt(session, dataset)
    fit = page["fit"]
    context: dict[str, Any] = {"viewer": viewer, "page": page, "json_url": f"/api/irt/{dataset}"}
    if fit is not None:
        context |= {
            "chart": _ability_chart(fit),
            "most": _with_links(dataset, fit["most_discriminating"]),
            "least": _with_links(dataset, fit["least_discriminating"]),
            "prompts": _with_links(dataset, fit["prompts"]),
            "significant_pairs": sum(1 for pair in fit["pairs"] if pair["significant"]),
        }
    return render(request, "irt.html", context)


@router.get("/datasets/{name}/prompts/{prompt_id}")
@public_page("prompt")
def prompt_page(request: Request, name: str, prompt_id: str, session: SessionDep, viewer: ViewerDep):
    context = {
        "viewer": viewer,
        "prompt": comparison.prompt_page(session, get_storage(), name, prompt_id),
        "json_url": f"/api{prompt_url(name, prompt_id)}",
    }
    return render(request, "prompt.html", context)
