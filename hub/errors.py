"""Typed hub errors: each carries the HTTP status and a message safe to show the user; one handler renders them."""

from __future__ import annotations


class HubError(Exception):
    """Base class of every error the hub raises on purpose. `field` names the offending form field or file."""

    status_code = 500
    retry_after: int | None = None  # seconds until trying again may succeed (429, 503), sent as Retry-After

    def __init__(self, message: str, *, field: str | None = None):
        self.message = message
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)

    @property
    def response_headers(self) -> dict[str, str]:
        """The response headers this error asks for: Retry-After when trying again may succeed."""
        return {"Retry-After": str(self.retry_after)} if self.retry_after else {}


class BadRequest(HubError):
    status_code = 400


class Unauthorized(HubError):
    status_code = 401


class Forbidden(HubError):
    status_code = 403


class NotFound(HubError):
    status_code = 404


class Conflict(HubError):
    status_code = 409


class PayloadTooLarge(HubError):
    status_code = 413


class UnprocessableInput(HubError):
    status_code = 422


class TooManyRequests(HubError):
    """A rate limit ran out (hub/services/accounts/rate_limits.py); `retry_after` seconds until it lets one in again."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int, field: str | None = None):
        super().__init__(message, field=field)
        self.retry_after = max(1, retry_after)


class ServiceUnavailable(HubError):
    """The database is busy or restarting: the client may try again (a repeated submission is recognised)."""

    status_code = 503


class QueueUnavailable(ServiceUnavailable):
    """The job queue refused the job; it waits in the outbox and is sent again when the queue is back."""

    retry_after = 30


class StorageUnavailable(ServiceUnavailable):
    """The file storage cannot be written; nothing was stored."""

    retry_after = 60
