"""What people read says things in words: a page names a form field by its label ("System B", not `system_b_id`), the
hub's refusals carry no internal field or status names (`human_evaluation`), and p-values read "p < 0.001"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from sqlmodel import Session, select

from hub.models import System
from hub.web.app import create_app
from hub.web.templating import field_label
from tests.hub.conftest import DATASET, auth, post

HUB = Path(__file__).resolve().parents[2] / "hub"
ERRORS = {
    "BadRequest",
    "Conflict",
    "Forbidden",
    "HubError",
    "NotFound",
    "PayloadTooLarge",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "UnprocessableInput",
}
# snake_case words a message may name on purpose: a column of the original ChatEval's votes.csv, a file name example
MEANT = {"assign_secs", "ncm__cakechat"}


@pytest.mark.parametrize(
    ("field", "label"),
    [
        ("system_a_id", "System A"),
        ("system_b_id", "System B"),
        ("responses[hub-open-v1]", "Responses for hub-open-v1"),
        ("loglik[ncm]", "Log-likelihoods for ncm"),
        ("systems", "systems"),
        ("systems.1.key_ref", "System 2: key reference"),  # an interactive study's second system
        ("schema_text", "Schema"),
        ("some_new_field", "some new field"),
        (None, ""),
    ],
)
def test_field_labels(field, label):
    assert field_label(field) == label


def _message_texts() -> list[tuple[str, str]]:
    """The literal text of the first argument of every hub error raised in hub/ (f-string parts joined)."""
    found = []
    for path in sorted(HUB.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ERRORS):
                continue
            if not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                text = first.value
            elif isinstance(first, ast.JoinedStr):
                text = "".join(v.value for v in first.values if isinstance(v, ast.Constant))
            else:
                continue
            found.append((f"{path.relative_to(HUB.parent)}:{node.lineno}", text))
    return found


def test_no_refusal_names_an_internal_field_or_status():
    messages = _message_texts()
    assert len(messages) > 100  # the scan sees the hub's refusals
    internal = [
        f"{where}: {word}"
        for where, text in messages
        for word in re.findall(r"\b[a-z]+_[a-z_]+\b", text)
        if word not in MEANT
    ]
    assert internal == []


def test_a_status_in_a_refusal_is_in_words(hub_env, people, baselines):
    from fastapi.testclient import TestClient

    with TestClient(create_app()) as client:
        submission_id = post(client, people["owner"]).json()[0]["id"]
        admin = auth(people["admin"])
        assert client.post(f"/api/admin/submissions/{submission_id}/approve", headers=admin).status_code == 200
        again = client.post(f"/api/admin/submissions/{submission_id}/approve", headers=admin)
    # the first approval queued the evaluation; approving again is refused, naming the status in words
    assert again.status_code == 409
    assert re.fullmatch(
        rf"submission #{submission_id} is not waiting for review \(now: [A-Z][a-z ,]+\)", again.json()["error"]
    )


def test_the_admin_experiment_form_names_the_field_by_its_label(hub_env, admin_user, baselines):
    from tests.hub.test_pages_account import browser, form, log_in

    with Session(hub_env) as session:
        unjudged = System(name="no responses yet", is_public=True)
        session.add(unjudged)
        session.commit()
        unjudged_id = unjudged.id
    with browser(create_app()) as client:
        log_in(client, "admin")
        fields = {"dataset": DATASET, "system_a_id": baselines["echo"], "system_b_id": unjudged_id}
        refused = form(client, "/admin/experiments", fields, token_from="/admin/experiments")
    assert refused.status_code == 422
    assert "<strong>System B</strong>: system #" in refused.text and "has no approved responses" in refused.text
    assert "system_b_id</" not in refused.text and "system_b_id:" not in refused.text


def test_a_public_profile_shows_a_submission_status_in_words(hub_env, people):
    from fastapi.testclient import TestClient

    from hub.models import Submission, SubmissionStatus, User
    from tests.hub.conftest import responses_file, submitted_system

    with Session(hub_env) as session:
        owner = session.exec(select(User).where(User.email == "owner@example.org")).one()
        system = submitted_system(session, "worded bot", owner.id, True, responses_file().decode().splitlines())
        submission = session.exec(select(Submission).where(Submission.system_id == system.id)).one()
        submission.status = SubmissionStatus.human_evaluation
        session.add(submission)
        session.commit()
        system_id = system.id
    with TestClient(create_app()) as client:
        page = client.get(f"/systems/{system_id}", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert ">Human evaluation</span>" in page.text and "human_evaluation<" not in page.text
