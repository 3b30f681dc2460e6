"""The client side of `POST /api/submissions` (`chateval submit`): sends the files, turns each way the hub can say no
into the toolkit's typed errors, so the command exits with a documented code (README, "Exit codes").

- a file that is not there: NotFoundError (4), before anything is sent;
- the hub refused the file or a field (400, 409, 413, 422): UnprocessableSubmission (3) with the hub's message;
- no hub at the address, a time-out, a dropped connection, a busy or failing hub (404/405 at the API's address,
  429, 5xx): NetworkError (8), with the Retry-After the hub asked for;
- the hub refused the token (401/403): CredentialsRefused (9).

Messages never carry the token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from evaluation.errors import CredentialsRefused, InvalidInputError, NetworkError, NotFoundError

CONNECT_TIMEOUT_S = 10.0  # an address with nothing behind it fails fast
UPLOAD_TIMEOUT_S = 300.0  # a large file is validated by the hub before it answers
MAX_ERROR_CHARS = 500


class UnprocessableSubmission(InvalidInputError):
    """The hub looked at the submission and refused it (its message names the field or file and line)."""


@dataclass
class SubmissionRequest:
    """What `chateval submit` sends: the form fields and the files, by dataset."""

    name: str
    responses: dict[str, Path]
    loglik: dict[str, Path] = field(default_factory=dict)
    description: str = ""
    paper_url: str = ""
    code_url: str = ""
    weights_url: str = ""
    public: bool = False
    allow_empty: bool = False
    baselines: list[int] = field(default_factory=list)

    def form(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "paper_url": self.paper_url,
            "code_url": self.code_url,
            "weights_url": self.weights_url,
            "is_public": "true" if self.public else "false",
            "allow_empty": "true" if self.allow_empty else "false",
            "baselines": [str(b) for b in self.baselines],
        }

    def files(self) -> list[tuple[str, tuple[str, bytes, str]]]:
        """Every file read, after checking that each exists (NotFoundError names the first missing one)."""
        pairs = [(f"responses[{d}]", p) for d, p in self.responses.items()]
        pairs += [(f"loglik[{d}]", p) for d, p in self.loglik.items()]
        for _, path in pairs:
            if not path.is_file():
                raise NotFoundError("file not found", path=path)
        return [(key, (path.name, path.read_bytes(), "application/octet-stream")) for key, path in pairs]


def _hub_error(reply: httpx.Response) -> tuple[str, str | None]:
    """The hub's `{"error", "field"}` body as (message, field); the start of any other body as the message."""
    try:
        body = reply.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        field_name = body.get("field")
        return body["error"][:MAX_ERROR_CHARS], field_name if isinstance(field_name, str) else None
    if isinstance(body, dict) and "detail" in body:  # FastAPI's own validation answer
        return json.dumps(body["detail"])[:MAX_ERROR_CHARS], None
    return (reply.text.strip()[:MAX_ERROR_CHARS] or reply.reason_phrase), None


def _refusal(reply: httpx.Response, url: str) -> Exception:
    """The typed error for an answer of 400 or more."""
    status = reply.status_code
    message, field_name = _hub_error(reply)
    where = f"{field_name}: " if field_name else ""
    if status in (401, 403):
        return CredentialsRefused(
            f"the hub at {url} refused the API token (HTTP {status}: {message}); create a new token on the hub's "
            "account page and pass it with --token or CHATEVAL_TOKEN"
        )
    if status in (404, 405):
        return NetworkError(f"no ChatEval hub answers at {url} (HTTP {status} for /api/submissions); check --url")
    if status == 429 or status >= 500:
        retry = reply.headers.get("retry-after", "")
        later = f"; try again in {retry} s" if retry.isdigit() else "; try again later"
        return NetworkError(f"the hub at {url} could not take the submission (HTTP {status}: {message}){later}")
    return UnprocessableSubmission(f"the hub refused the submission (HTTP {status}): {where}{message}")


def submit(request: SubmissionRequest, *, url: str, token: str) -> list[dict[str, Any]]:
    """Send one submission; the hub's JSON list of created submissions (one per dataset)."""
    base = url.rstrip("/")
    files = request.files()
    timeout = httpx.Timeout(UPLOAD_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    try:
        reply = httpx.post(
            f"{base}/api/submissions",
            data=request.form(),
            files=files,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
    except httpx.InvalidURL as exc:
        raise NetworkError(f"{url!r} is not a hub address (expected http://HOST[:PORT]): {exc}") from exc
    except httpx.UnsupportedProtocol as exc:
        raise NetworkError(f"{url!r} is not a hub address (expected http:// or https://)") from exc
    except httpx.HTTPError as exc:  # connection refused, DNS, time-out, dropped connection
        raise NetworkError(f"could not reach the hub at {url}: {type(exc).__name__}: {exc}") from exc
    if reply.status_code >= 400:
        raise _refusal(reply, url)
    try:
        created = reply.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NetworkError(
            f"the server at {url} answered HTTP {reply.status_code} but not with JSON; is it a hub?"
        ) from exc
    if not isinstance(created, list):
        raise NetworkError(f"the server at {url} did not answer as a hub does (expected a list of submissions)")
    return created
