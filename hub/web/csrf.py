"""CSRF protection: a secret per browser session, sent back with every form (or header) and compared in constant time.

Why not a library: `starlette-csrf` (double-submit cookie) only reads a request header, so plain HTML forms
without JavaScript could not carry the token. A token kept in the signed session cookie (the synchroniser
pattern) works for forms and headers alike, and a token from another session never matches.

Requests with `Authorization: Bearer ...` are exempt: a browser never adds that header to a forged cross-site
request, and such requests are authenticated by the token, not by a cookie.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from hub.errors import Forbidden
from hub.web.sessions import SESSION_ID
from hub.web.templating import templates

FIELD = "csrf_token"  # the hidden form field
HEADER = "x-csrf-token"  # for script clients that use the browser session on the JSON API
SESSION_KEY = "csrf_token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MESSAGE = (
    "this form has expired or was not sent from this site (missing or wrong CSRF token); "
    "reload the page and submit it again"
)


def csrf_token(request: Request) -> str:
    """The session's token, made on first use (the session cookie then carries it)."""
    token = request.session.get(SESSION_KEY)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        request.session[SESSION_KEY] = token
    return token


def has_bearer_token(headers: Headers) -> bool:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def token_matches(session: dict, sent: object) -> bool:
    expected = session.get(SESSION_KEY)
    if not isinstance(sent, str) or not isinstance(expected, str) or not sent or not expected:
        return False
    # Bytes, because compare_digest refuses non-ASCII str; constant time, so timing reveals nothing.
    return secrets.compare_digest(sent.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


async def require_csrf(request: Request) -> None:
    """Dependency for form routes: 403 unless the form's `csrf_token` is this session's token."""
    if has_bearer_token(request.headers):
        return
    form = await request.form()  # Starlette caches the parsed form, so the route reads it again for free
    if not token_matches(request.session, form.get(FIELD)):
        raise Forbidden(MESSAGE)


CsrfDep = Annotated[None, Depends(require_csrf)]


class ApiCsrfMiddleware:
    """The JSON API also accepts the browser session, so a state-changing API call that relies on it (no Bearer
    token, a logged-in session) must carry the session's token in the `X-CSRF-Token` header.

    Add it *before* SessionMiddleware in create_app, so that it runs inside it and sees the session."""

    def __init__(self, app: ASGIApp, prefix: str = "/api/"):
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS and scope["path"].startswith(self.prefix):
            if "session" not in scope:
                raise RuntimeError("ApiCsrfMiddleware must be added before SessionMiddleware (so it runs inside it)")
            headers = Headers(scope=scope)
            session = scope["session"]
            uses_session = bool(session.get(SESSION_ID))
            if not has_bearer_token(headers) and uses_session and not token_matches(session, headers.get(HEADER)):
                response = JSONResponse({"error": MESSAGE.replace("form", "request"), "field": HEADER}, 403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


# Every template can put the token in a form: {{ csrf_token(request) }} (see templates/_acct_csrf.html).
templates.env.globals["csrf_token"] = csrf_token
