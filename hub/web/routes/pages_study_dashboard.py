"""A study's dashboard page (labels per question, post-edits, reversals, agreement, assistance, downloads): admins
see any study, anyone else a closed study an admin published (404 alike otherwise)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from hub.services.studies import dashboard
from hub.web.deps import DatabaseId, SessionDep, ViewerDep
from hub.web.routes.pages_account import page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["study pages"], include_in_schema=False)


@router.get("/studies/{study_id}/dashboard")
def dashboard_page(request: Request, study_id: DatabaseId, session: SessionDep, viewer: ViewerDep):
    view = dashboard.dashboard(session, viewer, study_id)
    api = f"/api/studies/{study_id}"
    downloads = [
        {
            "url": f"{api}/conversations.jsonl",
            "label": "Conversations (JSONL: message trees, edits, branches, reversals)",
        },
        {"url": f"{api}/annotations.csv", "label": "Annotations (CSV)"},
        {"url": f"{api}/annotations.jsonl", "label": "Annotations (JSONL)"},
    ]
    if view["counts"]["post_edits"]:
        downloads += [
            {"url": f"{api}/references", "label": "Accepted post-edits as a reference dataset: prompts.jsonl"},
            {"url": f"{api}/references/manifest.json", "label": "… and its manifest.json (save both in one folder)"},
        ]
    context = {"view": view, "downloads": downloads, "json_url": f"{api}/dashboard"}
    return page(request, "studies/dashboard.html", viewer, context)
