"""A study's data as downloads: its conversations (JSONL trees), its annotations (CSV or JSONL) and its accepted
post-edits as a reference dataset; and its dashboard as JSON. Admins may read any study; anyone else a closed study
an admin published, and then only its participants' rows (404 alike for every other study, so a draft's existence
never leaks)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response, StreamingResponse

from hub.services.studies import dashboard, downloads, references
from hub.web.deps import DatabaseId, SessionDep, ViewerDep
from hub.web.openapi_docs import error_responses
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["study data"], responses=error_responses(404))


def _send(export) -> Response:
    # Admins' downloads hold private rows: no shared cache may keep any of them.
    headers = {**export.headers, "Cache-Control": "no-store"}
    return StreamingResponse(export.pieces(), media_type=export.media_type, headers=headers)


@router.get("/api/studies/{study_id}/dashboard")
def dashboard_json(study_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    """The dashboard page as JSON: label distributions per question (all systems and per system) with agreement
    (Krippendorff's alpha, percent agreement, bootstrap intervals), edit rate and size and reversals per system."""
    return dashboard.dashboard(session, viewer, study_id)


@router.get("/api/studies/{study_id}/references/manifest.json")
def references_manifest(study_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> Response:
    """The manifest of the reference dataset (name, version, licence, the prompts file's sha256): saved beside
    `references` as `prompts.jsonl`, the two make a dataset folder the toolkit loads."""
    body = references.manifest_json(session, viewer, study_id)
    return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})


@router.get("/api/studies/{study_id}/references")
def references_download(study_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> Response:
    """Accepted post-edits as the toolkit's dataset prompts (JSONL): the conversation so far as `context`, the
    edited reply as the one reference."""
    body, filename = references.prompts_file(session, viewer, study_id)
    headers = {"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"}
    return Response(body, media_type="application/x-ndjson; charset=utf-8", headers=headers)


@router.get("/api/studies/{study_id}/conversations.jsonl")
def conversations_download(study_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> Response:
    """One line per conversation: its messages as a tree (parent ids), post-edits, branches with their outcome, and
    reversals. Participants appear as public hashes."""
    return _send(downloads.study_download(session, viewer, study_id, "conversations.jsonl"))


@router.get("/api/studies/{study_id}/annotations.csv")
def annotations_csv(study_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> Response:
    """One row per answer (ids, never names; participants as public hashes); formula-like text cells quoted."""
    return _send(downloads.study_download(session, viewer, study_id, "annotations.csv"))


@router.get("/api/studies/{study_id}/annotations.jsonl")
def annotations_jsonl(study_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> Response:
    """The same rows as annotations.csv, as JSONL."""
    return _send(downloads.study_download(session, viewer, study_id, "annotations.jsonl"))
