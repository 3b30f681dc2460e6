"""Public pages and their JSON twins served from the read side's cache, with ETag, Last-Modified and 304s.

`@public_page("name")` wraps a sync route (under its `@router.get`). For a request the answer does not depend on
(no `viewer` parameter, or an anonymous viewer) it reads the data version once, answers 304 when the client's
If-None-Match (or else If-Modified-Since) is current, serves the cached bytes of (route, path, query, version), or
builds the page with the route, keeps its bytes and serves them. A signed-in viewer's page (owner's private systems,
admin's view, the nav with the account) is built by the route for that request and never cached, and no cached page
is ever served to them. `cached_download` does the same for the async downloads route. `CachedPageShortcut`
serves anonymous visitors the pages kept here before anything else runs (version_reads: a read of the data
version after the request arrived, shared by the requests that wait for the same read).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import threading
from collections.abc import Awaitable, Callable
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from sqlmodel import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from hub.services.publishing.read_side import PAGES, CachedPage, Version, current
from hub.web.security_headers import sending_security_headers
from hub.web.version_reads import read_version

Call = TypeVar("Call", bound=Callable[..., Any])
CACHE_CONTROL = "no-cache"  # a browser or proxy keeps the page but asks again, with If-None-Match, every time
VARY = "Cookie, Authorization, Accept-Encoding"  # signed-in visitors get other answers at the same address
GZIP_FROM_BYTES = 1024
JSON_FORMAT: dict[str, Any] = {"ensure_ascii": False, "allow_nan": False, "indent": None, "separators": (",", ":")}
DROPPED_HEADERS = frozenset(
    {"content-length", "content-type", "set-cookie", "etag", "last-modified", "cache-control", "vary"}
)


# One build per page at a time in a process: after a write, a burst of visitors waits for the first one's build
# instead of all building the same page (striped locks: bounded, whatever the keys).
_BUILDS = [threading.Lock() for _ in range(64)]


def _target(scope: Scope) -> str:
    """The request's path and query (parameters sorted, as Starlette parses them): with the route's name, its page's
    key. From the ASGI scope, so the shortcut finds a page before routing without building a Request."""
    parameters = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    query = "&".join(sorted(f"{k}={v}" for k, v in parameters))
    return f"{scope['path']}?{query}"


def _key(name: str, request: Request) -> str:
    return f"{name} {_target(request.scope)}"


def _etag(key: str, version: Version) -> str:
    return f'W/"v{version.tag}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"'


def _validators(key: str, version: Version) -> dict[str, str]:
    return {
        "ETag": _etag(key, version),
        "Last-Modified": format_datetime(version.changed_at, usegmt=True),
        "Cache-Control": CACHE_CONTROL,
        "Vary": VARY,
    }


def _not_modified(request: Request, etag: str, version: Version) -> bool:
    """If-None-Match (weak comparison; `*` matches) decides when present, else If-Modified-Since (whole seconds)."""
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or etag.removeprefix("W/") in tags
    if_modified_since = request.headers.get("if-modified-since")
    if if_modified_since:
        try:
            since = parsedate_to_datetime(if_modified_since)
        except (TypeError, ValueError):
            return False
        if since.tzinfo is None:
            return False
        return version.changed_at.replace(microsecond=0) <= since
    return False


def _accepts_gzip(request: Request) -> bool:
    for coding in request.headers.get("accept-encoding", "").split(","):
        name, _, params = coding.strip().partition(";")
        if name.strip().lower() == "gzip":
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def _serve(request: Request, key: str, version: Version, page: CachedPage) -> Response:
    headers = {**dict(page.headers), **_validators(key, version)}
    body = page.body
    if page.gzipped is not None and _accepts_gzip(request):
        body, headers["Content-Encoding"] = page.gzipped, "gzip"
    return Response(body, status_code=page.status_code, media_type=page.media_type, headers=headers)


def _json_body(result: Any) -> bytes:
    """`JSONResponse(jsonable_encoder(result)).body`, at C speed: json.dumps writes the plain types (most of a
    view-model) itself and hands only the others (dates, enums, models, dataclasses) to jsonable_encoder, as FastAPI
    would. Dict keys json.dumps cannot write fall back to the slow path, so the bytes are the same either way."""
    try:
        return json.dumps(result, default=jsonable_encoder, **JSON_FORMAT).encode("utf-8")
    except TypeError:
        return json.dumps(jsonable_encoder(result), **JSON_FORMAT).encode("utf-8")


def _as_response(result: Any, kwargs: dict[str, Any]) -> Response:
    """The route's answer as FastAPI would send it: a Response as it is, anything else as JSON, with the headers a
    route set on its injected `response` (pagination)."""
    if isinstance(result, Response):
        return result
    response = Response(_json_body(result), media_type="application/json")
    for value in kwargs.values():
        if isinstance(value, Response):
            for name, header in value.headers.items():
                if name.lower() not in DROPPED_HEADERS:
                    response.headers[name] = header
    return response


def _keep(response: Response) -> CachedPage | None:
    body = getattr(response, "body", None)
    if response.status_code != 200 or not isinstance(body, bytes) or response.background is not None:
        return None
    headers = tuple((k, v) for k, v in response.headers.items() if k.lower() not in DROPPED_HEADERS)
    if any(k.lower() == "content-encoding" for k, _ in headers):
        return None
    gzipped = gzip.compress(body, compresslevel=6, mtime=0) if len(body) >= GZIP_FROM_BYTES else None
    return CachedPage(body=body, media_type=response.media_type, headers=headers, gzipped=gzipped)


def _respond(request: Request, key: str, version: Version, build: Callable[[], Response]) -> Response:
    if _not_modified(request, _etag(key, version), version):
        return Response(status_code=304, headers=_validators(key, version))
    page = PAGES.get(key, version)
    if page is None:
        with _BUILDS[hash(key) % len(_BUILDS)]:
            page = PAGES.get(key, version)  # built meanwhile by the request this one waited for
            if page is None:
                response = build()
                page = _keep(response)
                if page is None:
                    return response
                PAGES.put(key, version, page, _target(request.scope))
    return _serve(request, key, version, page)


def public_page(name: str) -> Callable[[Call], Call]:
    """Cache a sync route's answer for everyone it does not depend on; it needs `request` and `session` parameters
    (and `viewer` when the answer depends on who asks)."""

    def decorate(route: Call) -> Call:
        @functools.wraps(route)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            request: Request = kwargs["request"]
            session: Session = kwargs["session"]
            if kwargs.get("viewer") is not None:
                return route(*args, **kwargs)
            key = _key(name, request)
            return _respond(request, key, current(session), lambda: _as_response(route(*args, **kwargs), kwargs))

        return wrapper  # type: ignore[return-value]

    return decorate


async def cached_download(request: Request, name: str, build: Callable[[], Awaitable[Response]]) -> Response:
    """A download (the same for every caller) from the cache, or built by `build` and kept when it fits."""
    version = await read_version()
    key = _key(name, request)
    if _not_modified(request, _etag(key, version), version):
        return Response(status_code=304, headers=_validators(key, version))
    page = PAGES.get(key, version)
    if page is None:
        response = await build()
        page = _keep(response)
        if page is None:
            return response
        PAGES.put(key, version, page, _target(request.scope))
    return _serve(request, key, version, page)


class CachedPageShortcut:
    """ASGI middleware, outermost: a GET with neither a cookie nor an Authorization header (an anonymous visitor,
    as the routes' `viewer` would find) of a page the cache keeps is answered from the cache, 304 included, with
    the security headers every answer gets, and without the session, routing, dependencies or the route. It answers
    only what `@public_page` would: a page is found by its request's path and query, under which only a page built
    for an anonymous visitor (or the same for everyone) is kept, and only at the data version read from the database
    after the request arrived (version_reads), so a write in any process is seen by the next request here. Anything
    else (not cached yet, another version, signed-in visitors) goes on to the app unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not _anonymous(scope):
            await self.app(scope, receive, send)
            return
        key = PAGES.key_for(_target(scope))
        if key is None:
            await self.app(scope, receive, send)
            return
        version = await read_version()
        request = Request(scope)
        if _not_modified(request, _etag(key, version), version):
            response = Response(status_code=304, headers=_validators(key, version))
        else:
            page = PAGES.get(key, version)
            if page is None:
                await self.app(scope, receive, send)
                return
            response = _serve(request, key, version, page)
        await response(scope, receive, sending_security_headers(scope, send))


def _anonymous(scope: Scope) -> bool:
    return not any(name in (b"cookie", b"authorization") for name, _ in scope["headers"])
