"""Request-size limits before parsing: an ASGI middleware that refuses a body larger than its route's limit with 413.

Limits per route: submissions (`POST /api/submissions`, `POST /submit`) may carry `max_upload_bytes` per file for
every file a submission can hold (a responses and a log-likelihood file per installed dataset) plus
`max_form_bytes` for the text fields; experiment creation, whose JSON may list up to 100,000 prompt ids, gets
`EXPERIMENT_FORM_FACTOR` x `max_form_bytes`; a study image upload (`POST /api/studies/{id}/images`) one image of
the studies' size cap plus `max_form_bytes`; every other request `max_form_bytes`.

A declared Content-Length over the limit is refused before the route runs, so nothing is read, spooled or parsed.
A body without a Content-Length (chunked) is counted as it streams and refused as soon as it passes the limit:
the parser stops there, so memory never depends on what the client sends (Starlette spools files to disk past
1 MB anyway). Why not Starlette's own `RequestBodyLimitMiddleware`: it lets the route run when the route never
reads the body (an anonymous 403 with a huge body still runs the route) and answers without saying the limit.
"""

from __future__ import annotations

import re

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.errors import PayloadTooLarge
from hub.services.studies.images import MAX_IMAGE_BYTES
from hub.settings import get_settings

UPLOAD_ROUTES = frozenset({("POST", "/api/submissions"), ("POST", "/submit")})
EXPERIMENT_ROUTES = frozenset({("POST", "/api/experiments"), ("POST", "/admin/experiments")})
EXPERIMENT_FORM_FACTOR = 8
FILES_PER_DATASET = 2  # responses[DATASET] and loglik[DATASET]
STUDY_IMAGE_ROUTE = re.compile(r"/api/studies/[0-9]{1,19}/images")


class BodyTooLarge(PayloadTooLarge, HTTPException):
    """Raised while the body streams in. An HTTPException, so that FastAPI's body parsing passes it on instead of
    turning it into a 400; a HubError, so that the app's handler renders it (JSON or the error page)."""

    def __init__(self, limit: int):
        PayloadTooLarge.__init__(self, limit_message(limit), field="body")
        HTTPException.__init__(self, status_code=413, detail=self.message)


def limit_message(limit: int) -> str:
    return f"the request body is larger than this route accepts ({limit:,} bytes at most)"


def upload_files() -> int:
    from evaluation.dataset import installed_dataset_dirs

    return FILES_PER_DATASET * max(1, len(installed_dataset_dirs()))


def body_limit(method: str, path: str) -> int:
    """The largest body, in bytes, that `method path` accepts."""
    settings = get_settings()
    route = (method, path.rstrip("/") or "/")
    if route in UPLOAD_ROUTES:
        return settings.max_upload_bytes * upload_files() + settings.max_form_bytes
    if route in EXPERIMENT_ROUTES:
        return settings.max_form_bytes * EXPERIMENT_FORM_FACTOR
    if route[0] == "POST" and STUDY_IMAGE_ROUTE.fullmatch(route[1]):
        return MAX_IMAGE_BYTES + settings.max_form_bytes
    return settings.max_form_bytes


class BodyLimitMiddleware:
    """Add it last in create_app (outermost), so that an oversized request is refused before anything else runs."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope["method"], scope["path"])
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > limit):
            await self._refuse(scope, receive, send, limit)
            return

        received = 0
        started = exceeded = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if exceeded:  # the app's error handler answered: close, so the server does not read the rest
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if started:  # the route answered before reading everything; the connection is closed anyway
                raise
            await self._refuse(scope, receive, send, limit)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        from hub.web.templating import render, wants_html

        request = Request(scope, receive)
        error = BodyTooLarge(limit)
        if wants_html(request):
            context = {"status_code": 413, "message": error.message, "field": error.field, "viewer": None}
            response = render(request, "error.html", context, status_code=413)
        else:
            from starlette.responses import JSONResponse

            response = JSONResponse({"error": error.message, "field": error.field}, status_code=413)
        response.headers["Connection"] = "close"  # the unread body is not worth reading to keep the connection
        await response(scope, receive, send)
