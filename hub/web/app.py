"""Builds the FastAPI application: middleware, error handling, routes and the embedded job consumer."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sqlalchemy.exc
from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware

from hub.errors import HubError, ServiceUnavailable, UnprocessableInput
from hub.migrate import upgrade
from hub.settings import get_settings
from hub.storage import get_storage
from hub.web.body_limit import BodyLimitMiddleware
from hub.web.collector import settle_long_lived_objects
from hub.web.csrf import ApiCsrfMiddleware
from hub.web.deps import session_viewer
from hub.web.inputs import refuse_malformed_input
from hub.web.openapi_docs import EVERY_ROUTE, error_responses
from hub.web.read_cache import CachedPageShortcut
from hub.web.routes import (
    api_admin,
    api_admin_users,
    api_chats,
    api_conversations,
    api_experiments,
    api_judging,
    api_lifecycle,
    api_public,
    api_queue,
    api_rater_qa,
    api_studies,
    api_study_assistance,
    api_study_data,
    api_study_images,
    api_submissions,
    pages_account,
    pages_admin,
    pages_admin_experiments,
    pages_conversations,
    pages_experiments,
    pages_irt,
    pages_judging,
    pages_lifecycle,
    pages_mturk,
    pages_public,
    pages_queue,
    pages_rater_qa,
    pages_rating,
    pages_studies,
    pages_study_dashboard,
    pages_study_participant,
)
from hub.web.routes.api_docs import router as docs_router
from hub.web.security_headers import SecurityHeadersMiddleware
from hub.web.templating import STATIC, render, wants_html
from hub.web.threads import limit_request_threads

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 2
TRANSIENT_SIGNS = (
    "database is locked",
    "server closed the connection",
    "could not connect",
    "connection refused",
    "terminating connection",
    "the database system is starting up",
    "the database system is shutting down",
)


def _transient(exc: Exception) -> bool:
    """A pool timeout, a lost or refused connection, or SQLite's lock wait running out: worth trying again."""
    if isinstance(exc, sqlalchemy.exc.TimeoutError):
        return True
    if getattr(exc, "connection_invalidated", False):
        return True
    message = str(getattr(exc, "orig", exc)).lower()
    return any(sign in message for sign in TRANSIENT_SIGNS)


def create_app(*, embedded_worker: bool = False) -> FastAPI:
    """`embedded_worker`: consume the job queue inside this process (the one-machine default of `serve`)."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        upgrade()
        limit_request_threads(get_settings())
        get_storage()  # opened now: a local folder is cleared of temporary files a killed process left
        settle_long_lived_objects()
        consumer = None
        if embedded_worker:
            from hub.jobs import start_embedded_consumer

            consumer = start_embedded_consumer()
        yield
        if consumer is not None:
            consumer.stop(graceful=True)

    app = FastAPI(
        title="ChatEval Hub",
        docs_url=None,  # /docs is hub.web.routes.api_docs: Swagger UI from our static files, not a CDN
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        version="0.1.0",
        lifespan=lifespan,
        dependencies=[Depends(refuse_malformed_input)],  # control characters, out-of-range numbers: 422 first
        responses=error_responses(*EVERY_ROUTE),
    )
    settings = get_settings()
    app.add_middleware(ApiCsrfMiddleware)  # before SessionMiddleware, so it runs inside it and sees the session
    app.add_middleware(
        SessionMiddleware, secret_key=settings.secret_key, same_site="lax", https_only=settings.secure_cookies
    )
    app.add_middleware(BodyLimitMiddleware)  # last, so outermost: an oversized body is refused before anything runs
    app.add_middleware(SecurityHeadersMiddleware)  # around everything, refusals included; it only adds headers
    app.add_middleware(CachedPageShortcut)  # outermost: anonymous views of cached pages skip everything else

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    app.include_router(docs_router)

    @app.exception_handler(HubError)
    async def hub_error(request: Request, exc: HubError):
        if wants_html(request):
            context = {
                "status_code": exc.status_code,
                "message": exc.message,
                "field": exc.field,
                "viewer": session_viewer(request),
            }
            response = render(request, "error.html", context, status_code=exc.status_code)
        else:
            response = JSONResponse({"error": exc.message, "field": exc.field}, status_code=exc.status_code)
        response.headers.update(exc.response_headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        """FastAPI's own 422 (a path id out of range, a missing form field): JSON for the API, the error page for
        browsers, naming the field either way."""
        if not wants_html(request) or not exc.errors():
            return await request_validation_exception_handler(request, exc)
        first = exc.errors()[0]
        return await hub_error(request, UnprocessableInput(str(first["msg"]), field=str(first["loc"][-1])))

    @app.exception_handler(sqlalchemy.exc.TimeoutError)
    @app.exception_handler(sqlalchemy.exc.OperationalError)
    async def database_busy(request: Request, exc: Exception):
        # A burst that waits too long for a connection, or a database that is restarting: a clear 503 the rating
        # page and API clients retry, instead of an anonymous 500. Other operational errors (a missing table) are bugs.
        if not _transient(exc):
            raise exc
        log.warning("database busy or unavailable on %s: %s", request.url.path, str(exc).splitlines()[0][:200])
        busy = ServiceUnavailable("the hub's database is busy or restarting; try again in a moment")
        busy.retry_after = RETRY_AFTER_SECONDS
        return await hub_error(request, busy)

    app.include_router(api_lifecycle.router)  # GET /api/submissions?mine=1 before /{submission_id}
    app.include_router(api_submissions.router)
    app.include_router(api_queue.router)  # /api/queue, /api/account/quota
    app.include_router(pages_queue.router)  # /queue
    app.include_router(api_admin.router)
    app.include_router(api_admin_users.router)
    app.include_router(api_experiments.router)
    app.include_router(api_public.router)
    app.include_router(api_judging.router)
    app.include_router(api_conversations.router)
    app.include_router(api_studies.router)
    app.include_router(api_chats.router)
    app.include_router(api_study_images.router)
    app.include_router(api_study_assistance.router)  # suggestions, real-time drafts (MILO)
    app.include_router(api_study_data.router)  # /api/studies/ID/conversations.jsonl, annotations.csv, references
    app.include_router(pages_account.router)
    app.include_router(pages_lifecycle.router)
    app.include_router(pages_admin.router)
    app.include_router(pages_admin_experiments.router)
    app.include_router(pages_studies.router)  # /admin/studies
    app.include_router(pages_study_dashboard.router)  # /studies/ID/dashboard
    app.include_router(pages_study_participant.router)  # /studies/...
    app.include_router(pages_public.router)
    app.include_router(pages_irt.router)
    app.include_router(pages_judging.router)
    app.include_router(api_rater_qa.router)  # /api/admin/experiments/ID/qa...
    app.include_router(pages_rater_qa.router)  # /admin/experiments/ID/qa
    app.include_router(pages_conversations.router)
    app.include_router(pages_experiments.router)
    app.include_router(pages_rating.router)
    app.include_router(pages_mturk.router)
    return app
