"""Typed failures of an LLM endpoint; messages never carry the API key."""

from __future__ import annotations

from evaluation.errors import EvaluationError

ENDPOINT_EXIT_CODE = 6
"""`chateval` exit code when an endpoint fails (unreachable, timed out, rate-limited, malformed answer)."""
AUTH_EXIT_CODE = 7
"""`chateval` exit code when an endpoint refuses the key (401/403)."""


class EndpointError(EvaluationError):
    """An OpenAI-compatible endpoint did not give a usable answer (after the retries that apply)."""

    exit_code = ENDPOINT_EXIT_CODE


class EndpointUnreachable(EndpointError):
    """Nothing answered at the base URL (connection refused or dropped), after every retry."""


class EndpointAuthError(EndpointError):
    """The endpoint refused the key (HTTP 401 or 403); never retried."""

    exit_code = AUTH_EXIT_CODE


class EndpointRateLimited(EndpointError):
    """HTTP 429 on every attempt: the retries are exhausted."""


class EndpointServerError(EndpointError):
    """HTTP 5xx on every attempt, or another status the endpoint should not send (4xx other than 401/403/429)."""


class EndpointMalformed(EndpointError):
    """The endpoint answered 200 but not with a usable completion (not JSON, no choices, no content)."""


class EndpointTimeout(EndpointError):
    """No answer within the configured timeout, on every attempt."""


def scrub(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` (and of its last 8+ characters, as some APIs echo) masked."""
    if not secret:
        return text
    text = text.replace(secret, "***")
    tail = secret[-8:]
    return text.replace(tail, "***") if len(secret) >= 16 else text
