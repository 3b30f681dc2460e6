"""An admin attaches responses to an existing system (one the ChatEval import created): through the admin API
(checked whole, refused with the line for a bad file, admins only, idempotent) and scored by the real worker."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import AuditEntry, Submission, System
from hub.web.app import create_app
from tests.hub.conftest import auth

REPO = Path(__file__).resolve().parents[3]
DATASET = "hub-open-v1"
RESPONSES = (REPO / "baselines" / DATASET / "echo.txt").read_bytes()


def _imported_system(engine) -> int:
    with Session(engine) as session:
        system = System(name="Cakechat", description="Imported", is_public=True)
        session.add(system)
        session.commit()
        return system.id


def _attach(client, token, system_id, content=RESPONSES, **data):
    return client.post(
        f"/api/admin/systems/{system_id}/responses",
        headers=auth(token),
        data={"dataset": DATASET, **data},
        files={"responses": ("cakechat.txt", content, "text/plain")},
    )


def test_admin_attaches_and_the_worker_scores_it(hub_env, people):
    system_id = _imported_system(hub_env)
    with TestClient(create_app(embedded_worker=True)) as client:
        created = _attach(client, people["admin"], system_id)
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["attached"] is True and body["system"]["id"] == system_id
        deadline = time.monotonic() + 180
        while client.get(f"/api/submissions/{body['id']}").json()["status"] not in ("evaluated", "failed"):
            assert time.monotonic() < deadline, "the attached submission was never scored"
            time.sleep(0.5)
        shown = client.get(f"/api/submissions/{body['id']}").json()
        assert shown["status"] == "evaluated" and {s["metric"] for s in shown["scores"]} >= {"bleu-2", "distinct-1"}
        again = _attach(client, people["admin"], system_id)
        assert again.status_code == 201 and again.json()["attached"] is False and again.json()["id"] == body["id"]
        board = client.get(f"/api/leaderboards/{DATASET}").json()
        assert [r["system_id"] for r in board["rows"]].count(system_id) == 1
    with Session(hub_env) as session:
        assert len(session.exec(select(System).where(System.name == "Cakechat")).all()) == 1
        assert len(session.exec(select(Submission).where(Submission.system_id == system_id)).all()) == 1
        entry = session.exec(select(AuditEntry).where(AuditEntry.action == "attach_responses")).one()
        assert entry.target == f"system #{system_id}" and entry.detail["submission"] == body["id"]


def test_refusals_name_the_field(hub_env, people):
    system_id = _imported_system(hub_env)
    with TestClient(create_app()) as client:
        assert _attach(client, people["owner"], system_id).status_code == 403
        assert _attach(client, people["admin"], 999_999).status_code == 404
        missing = _attach(client, people["admin"], system_id, dataset="nope")
        assert missing.status_code == 404 and "nope" in missing.json()["error"]
        lines = RESPONSES.decode().splitlines()
        short = _attach(client, people["admin"], system_id, content=("\n".join(lines[:-1]) + "\n").encode())
        assert short.status_code == 422 and short.json()["field"] == "responses"
        assert "cakechat.txt" in short.json()["error"]
        blank = ("\n".join(["", *lines[1:]]) + "\n").encode()
        refused = _attach(client, people["admin"], system_id, content=blank)
        assert refused.status_code == 422 and "line 1" in refused.json()["error"]
        assert _attach(client, people["admin"], system_id, content=blank, allow_empty="true").status_code == 201
