"""What the OpenAPI document says about errors and hand-read bodies, shared by the JSON routers.

`error_responses(...)` documents the error answers routes give, each with the hub's error body
(`{"error": message, "field": offending field or null}`; a 422 from FastAPI's own validation has `detail`). The app
declares those every route may give (401 for a bad token, 413 body limit, 422 input guard, 429 rate limits, 503 busy
database); each router adds its own (403, 404, 409). `SUBMISSION_FORM` declares the multipart body that
`POST /api/submissions` reads by hand.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hub.web.inputs import MAX_DATABASE_ID


class ErrorBody(BaseModel):
    """Every refusal of the hub: a message to show and, when one field is at fault, its name."""

    error: str = Field(description="What is wrong, in words fit to show the user.")
    field: str | None = Field(default=None, description="The offending form field, parameter or file, if one is.")


class ValidationErrorBody(BaseModel):
    """FastAPI's own 422 for a parameter or JSON body of the wrong type or out of bounds: `loc` names the field."""

    detail: list[dict[str, Any]] = Field(description="One entry per problem: loc (where), msg, type.")


DESCRIPTIONS = {
    400: "A value the route cannot use (an address that is not one, a used or expired link); `field` names it.",
    401: "Not logged in: send an API token (Authorization: Bearer ceh_...) or log in.",
    403: "Logged in, but not allowed (e.g. not an admin), or a missing/wrong CSRF token for a browser session.",
    404: "No such thing, or one the caller may not see (private and unapproved items answer like missing ones).",
    409: "Conflicts with the current state (e.g. already reviewed, a duplicate upload, a name already taken).",
    413: "The request body or a file is larger than this route accepts.",
    422: "Invalid input; `field` names the offending field (control characters and out-of-range numbers included).",
    429: "Too many requests from this client or for this account; see the Retry-After header.",
    503: "The database or the job queue is busy or restarting; try again after the Retry-After header's seconds.",
}
ALWAYS = (413, 422, 503)
EVERY_ROUTE = (401, 413, 422, 429, 503)  # every route accepts a token, which can be wrong or rate-limited


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a router or route: the given codes plus those every route may give."""
    return {
        code: {
            "model": ErrorBody | ValidationErrorBody if code == 422 else ErrorBody,
            "description": DESCRIPTIONS[code],
        }
        for code in sorted({*codes, *ALWAYS})
    }


TEXT = {"type": "string"}
URL = {"type": "string", "format": "uri", "description": "http(s) URL"}
SUBMISSION_FORM: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {**TEXT, "description": "The system's name."},
                        "description": TEXT,
                        "paper_url": URL,
                        "code_url": URL,
                        "weights_url": URL,
                        "is_public": {"type": "boolean", "default": False},
                        "allow_empty": {
                            "type": "boolean",
                            "default": False,
                            "description": "Blank lines in text response files are meant as empty responses "
                            "(otherwise refused, naming the line).",
                        },
                        "baselines": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 1, "maximum": MAX_DATABASE_ID},
                            "description": "Ids of systems this one builds on (repeat the field).",
                        },
                    },
                    "patternProperties": {
                        r"^responses\[[a-z0-9][a-z0-9._-]*\]$": {
                            "type": "string",
                            "format": "binary",
                            "description": "responses[DATASET]: the response file for that dataset (one per field).",
                        },
                        r"^loglik\[[a-z0-9][a-z0-9._-]*\]$": {
                            "type": "string",
                            "format": "binary",
                            "description": "loglik[DATASET]: optional reference log-likelihoods (JSONL).",
                        },
                    },
                    "description": "At least one responses[DATASET] file; each file field at most once.",
                },
                "encoding": {"baselines": {"style": "form", "explode": True}},
            }
        },
    }
}


def _inlined(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inlined(definitions[node["$ref"].rsplit("/", 1)[-1]], definitions)
        return {key: _inlined(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inlined(item, definitions) for item in node]
    return node


def json_body(form: type[BaseModel], required: bool = True) -> dict[str, Any]:
    """`openapi_extra=` for a route that reads its JSON body by hand (so that a 422 names the field without
    echoing its value): the body's schema, nested models inlined."""
    schema = form.model_json_schema(by_alias=True)
    schema = _inlined(schema, schema.pop("$defs", {}))
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": schema}}}}
