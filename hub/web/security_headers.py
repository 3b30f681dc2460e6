"""Security headers on every response: a strict Content-Security-Policy, no framing, no MIME sniffing, and a
referrer that never leaves the site (so an invite token in a URL never reaches another site).

The pages use no inline script or style and nothing from another site, so the policy is `default-src 'self'`, with
only `data:` images added (the empty favicon, Swagger UI's icons). `/docs` is no exception: its Swagger UI is served
from `hub/static/vendor/swagger-ui/` and started by a script file. One route differs, only where it must:

- `/mturk/`: Mechanical Turk shows the task page in a frame on its worker sites and the finished page posts the
  assignment back to them, so those sites may frame it and receive its forms; X-Frame-Options cannot name them and
  is left out there (browsers that know frame-ancestors ignore it anyway).

A pure ASGI middleware (not BaseHTTPMiddleware), so streamed downloads pass through unbuffered.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.services.human.mturk.workers import SUBMIT_HOSTS

BASE = {
    "default-src": "'self'",
    "img-src": "'self' data:",  # base.html's empty favicon (`data:,`) keeps browsers from asking for /favicon.ico
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
MTURK_HOSTS = " ".join(SUBMIT_HOSTS)
MTURK = {**BASE, "form-action": f"'self' {MTURK_HOSTS}", "frame-ancestors": MTURK_HOSTS}
MTURK_PREFIX = "/mturk/"

COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}


def _policy(directives: dict[str, str]) -> str:
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def headers_for(path: str) -> dict[str, str]:
    """The security headers of a response to `path`."""
    if path.startswith(MTURK_PREFIX):
        return {**COMMON, "Content-Security-Policy": _policy(MTURK)}
    return {**COMMON, "Content-Security-Policy": _policy(BASE), "X-Frame-Options": "DENY"}


def sending_security_headers(scope: Scope, send: Send) -> Send:
    """`send`, adding the security headers of the request's path to the response (a header the app set stays)."""
    extra = headers_for(scope["path"])

    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in extra.items():
                headers.setdefault(name, value)
        await send(message)

    return send_with_headers


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, sending_security_headers(scope, send))
