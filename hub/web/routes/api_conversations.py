"""JSON API for conversation sets: upload (multipart), list, the results and one conversation, the per-turn
download, and the admin's review and re-run."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from hub.errors import BadRequest, PayloadTooLarge, UnprocessableInput
from hub.services.conversations import uploads, views
from hub.services.submissions import quotas
from hub.services.submissions.submissions import UploadedFile
from hub.settings import get_settings
from hub.storage import get_storage
from hub.web import pagination
from hub.web.deps import DatabaseId, SessionDep, UserDep, ViewerDep
from hub.web.openapi_docs import TEXT, error_responses
from hub.web.submission_form import TRUE_VALUES
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["conversation sets"], responses=error_responses(403, 404, 409)
)
MAX_CONVERSATION_ID_CHARS = 200
ConversationId = Annotated[
    str,
    Query(
        alias="id", min_length=1, max_length=MAX_CONVERSATION_ID_CHARS, description="The conversation's id in the file."
    ),
]
UPLOAD_FORM: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["name", "conversations"],
                    "properties": {
                        "name": {**TEXT, "description": "A label for the set (at most 120 characters)."},
                        "description": TEXT,
                        "is_public": {"type": "boolean", "description": "Public once an admin approves it."},
                        "dataset": {**TEXT, "description": "Optional: that dataset's attached rubrics also grade."},
                        "conversations": {
                            "type": "string",
                            "format": "binary",
                            "description": 'JSONL: one {"messages": [{"role", "content"}, ...]} per line.',
                        },
                    },
                }
            }
        },
    }
}


def set_form(form: FormData) -> uploads.SetForm:
    return uploads.SetForm(
        name=str(form.get("name", "")),
        description=str(form.get("description", "")),
        is_public=str(form.get("is_public", "")).lower() in TRUE_VALUES,
        dataset=str(form.get("dataset", "")).strip() or None,
    )


def uploaded_file(form: FormData) -> UploadedFile | None:
    """The `conversations` file part (read whole: call off the event loop); other file parts are refused."""
    found: UploadedFile | None = None
    for key, value in form.multi_items():
        if not isinstance(value, UploadFile):
            continue
        if not value.filename and not value.size:  # an unused file input
            continue
        if key != uploads.FILE_FIELD:
            raise BadRequest(f"unexpected file field {key!r}; send the file as {uploads.FILE_FIELD!r}", field=key)
        if found is not None:
            raise UnprocessableInput(f"{key} was sent more than once; send one file", field=key)
        limit = get_settings().max_upload_bytes
        if value.size is not None and value.size > limit:  # refused before the file is read into memory
            raise PayloadTooLarge(f"{value.filename or key} is {value.size:,} bytes; the limit is {limit:,}", field=key)
        found = UploadedFile(value.filename or "conversations.jsonl", value.file.read())
    return found


@router.post("/api/conversation-sets", status_code=201, openapi_extra=UPLOAD_FORM, responses=error_responses(429))
async def create(request: Request, session: SessionDep, user: UserDep) -> dict[str, Any]:
    """Multipart form: name, description, is_public and the `conversations` JSONL file. The whole file is checked
    first (422 naming the line and the field); then it is stored and its evaluation queued. Counts toward the daily
    submission quota and upload attempts like response files (429 with Retry-After past either)."""
    quotas.take_attempt(user)  # every upload counts toward the daily attempts, valid or not (429 past it)
    form = await request.form()
    fields = set_form(form)
    upload = await run_in_threadpool(uploaded_file, form)
    created = await run_in_threadpool(
        uploads.create_set, session, get_storage(), owner=user, form=fields, upload=upload
    )
    return views.set_json(created, private=True)


@router.get("/api/conversation-sets")
def list_sets(session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    """The public (approved) sets, plus the viewer's own; every set for admins."""
    sets = uploads.visible_sets(session, viewer)
    return {"sets": [views.set_json(s, private=uploads.is_private_view(s, viewer)) for s in sets]}


@router.get("/api/conversation-sets/{set_id}")
def show(
    request: Request,
    response: Response,
    set_id: DatabaseId,
    session: SessionDep,
    viewer: ViewerDep,
    page: pagination.PageDep,
) -> dict[str, Any]:
    """The set, its aggregates by role and system label, and a page of its conversations."""
    conversation_set = uploads.get_visible(session, set_id, viewer)
    items, pages = views.conversations_page(session, set_id, page)
    pagination.set_headers(response, request, pages)
    return {
        **views.set_json(conversation_set, private=uploads.is_private_view(conversation_set, viewer)),
        "aggregates": views.aggregates(session, set_id),
        "conversation_list": items,
        "pagination": pagination.links(request, pages),
    }


@router.get("/api/conversation-sets/{set_id}/conversation")
def conversation(
    set_id: DatabaseId, conversation_id: ConversationId, session: SessionDep, viewer: ViewerDep
) -> dict[str, Any]:
    """One conversation's turns (text, values, skipped gates) and its whole-conversation values."""
    conversation_set = uploads.get_visible(session, set_id, viewer)
    return views.conversation_detail(session, get_storage(), conversation_set, conversation_id)


@router.get("/api/conversation-sets/{set_id}/turns.jsonl", response_class=Response)
def download(set_id: DatabaseId, session: SessionDep, viewer: ViewerDep) -> Response:
    """Every turn's and conversation's values as JSON Lines (run, turn, conversation and summary records)."""
    conversation_set = uploads.get_visible(session, set_id, viewer)
    body = "".join(views.download_lines(session, conversation_set)).encode()
    headers = {"Content-Disposition": f'attachment; filename="conversation-set-{set_id}-turns.jsonl"'}
    return Response(body, media_type="application/x-ndjson", headers=headers)


@router.post("/api/admin/conversation-sets/{set_id}/approve")
def approve(set_id: DatabaseId, session: SessionDep, user: UserDep) -> dict[str, Any]:
    return views.set_json(uploads.review(session, user, set_id, approve=True), private=True)


@router.post("/api/admin/conversation-sets/{set_id}/reject")
def reject(
    set_id: DatabaseId, session: SessionDep, user: UserDep, reason: Annotated[str, Form(max_length=5_000)] = ""
) -> dict[str, Any]:
    return views.set_json(uploads.review(session, user, set_id, approve=False, reason=reason), private=True)


@router.post("/api/admin/conversation-sets/{set_id}/rerun")
def rerun(set_id: DatabaseId, session: SessionDep, user: UserDep) -> dict[str, Any]:
    return views.set_json(uploads.rerun(session, user, set_id), private=True)
