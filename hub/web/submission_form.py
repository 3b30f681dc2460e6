"""Reads a submission's multipart form (web page and API alike) into the submission service's inputs."""

from __future__ import annotations

import re

from starlette.datastructures import FormData, UploadFile

from hub.errors import BadRequest, PayloadTooLarge, UnprocessableInput
from hub.services.submissions.submissions import SystemForm, UploadedFile
from hub.settings import get_settings
from hub.web.inputs import parse_id

FILE_FIELD = re.compile(r"^(responses|loglik)\[([a-z0-9][a-z0-9._-]*)\]$")
TRUE_VALUES = ("1", "true", "on", "yes")  # "on" is what a checked checkbox sends


def _optional(form: FormData, name: str) -> str | None:
    return str(form.get(name, "")).strip() or None


def system_form(form: FormData) -> SystemForm:
    baselines = [parse_id(v, field="baselines") for v in form.getlist("baselines") if str(v).strip()]
    return SystemForm(
        name=str(form.get("name", "")),
        description=str(form.get("description", "")),
        paper_url=_optional(form, "paper_url"),
        code_url=_optional(form, "code_url"),
        weights_url=_optional(form, "weights_url"),
        is_public=str(form.get("is_public", "")).lower() in TRUE_VALUES,
        baseline_ids=baselines,
        allow_empty=str(form.get("allow_empty", "")).lower() in TRUE_VALUES,
    )


def uploads(form: FormData) -> tuple[dict[str, UploadedFile], dict[str, UploadedFile]]:
    """Response and log-likelihood files by dataset. Reads the files: call it off the event loop."""
    responses: dict[str, UploadedFile] = {}
    logliks: dict[str, UploadedFile] = {}
    for key, value in form.multi_items():
        if not isinstance(value, UploadFile):
            continue
        if not value.filename and not value.size:  # browsers send unused file inputs as empty nameless parts
            continue
        match = FILE_FIELD.match(key)
        if not match:
            raise BadRequest(f"unexpected file field {key!r}; use responses[DATASET] or loglik[DATASET]", field=key)
        target = responses if match.group(1) == "responses" else logliks
        if match.group(2) in target:  # a later part would silently replace the earlier one
            raise UnprocessableInput(f"{key} was sent more than once; send one file per field", field=key)
        limit = get_settings().max_upload_bytes
        if value.size is not None and value.size > limit:  # refused before the file is read into memory
            raise PayloadTooLarge(f"{value.filename or key} is {value.size:,} bytes; the limit is {limit:,}", field=key)
        target[match.group(2)] = UploadedFile(value.filename or key, value.file.read())
    return responses, logliks
