"""MILO's QA of human work through the real API, the real job queue (an in-process consumer), the real client and
the real local endpoint server playing the judge, on SQLite and PostgreSQL: raters' reasons graded PASSED/REDO by
the shipped milo-qa rubric, an admin's own grades, and the judge's agreement (Wilson interval, Cohen's kappa)
checked against values computed here by hand; the key appears nowhere."""

from __future__ import annotations

import math
import time

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from evaluation.llm.server import LocalChatServer
from hub.models import RaterQaGrade, RatingReason
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, migrated_hub, new_experiment
from tests.hub.rater_qa.helpers import (
    KEY_ENV,
    SECRET,
    expected_score,
    expected_status,
    qa_responder,
    rate_with_reasons,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def hub_env(request, tmp_path, monkeypatch):
    """The conftest's hub, on SQLite and on a fresh PostgreSQL database (skipped when PostgreSQL is down)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    yield from migrated_hub(tmp_path, monkeypatch, url)


@pytest.fixture
def qa_judge(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with LocalChatServer(responder=qa_responder, expected_key=SECRET) as server:
        yield server


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def kappa(pairs: list[tuple[str, str]]) -> float:
    n = len(pairs)
    observed = sum(j == a for j, a in pairs) / n
    chance = sum(
        (sum(j == label for j, _ in pairs) / n) * (sum(a == label for _, a in pairs) / n)
        for label in ("PASSED", "REDO")
    )
    return (observed - chance) / (1 - chance)


def wait_for_run(client, url: str, headers: dict, timeout: float = 120.0) -> dict:
    deadline, body = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        body = client.get(url, headers=headers).json()
        if body["run"] and body["run"]["status"] in ("done", "failed"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"the QA run never finished: {body.get('run')}")


def test_a_judge_grades_raters_reasons_and_its_agreement_with_the_admin_is_shown(
    hub_env, people, admin_user, baselines, qa_judge
):
    admin = auth(people["admin"])
    prompts = load_dataset(DATASET).prompt_ids[:8]
    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=prompts, reasons="required")
    written = rate_with_reasons(hub_env, experiment.id, n_raters=3, seed=5)
    with Session(hub_env) as session:
        stored = {(r.assignment_id, r.item_id): r for r in session.exec(select(RatingReason))}
    assert {key: r.text for key, r in stored.items()} == written  # every reason stored with its rating

    url = f"/api/admin/experiments/{experiment.id}/qa"
    with TestClient(create_app(embedded_worker=True)) as client:
        judge = client.post(
            "/api/admin/judges",
            headers=admin,
            json={"name": "qa-judge", "base_url": qa_judge.base_url, "model": "rule-qa", "key_ref": KEY_ENV},
        )
        assert judge.status_code == 201, judge.text
        assert client.post(f"{url}/runs", headers=auth(people["owner"]), json={"judge_id": 1}).status_code == 403
        started = client.post(f"{url}/runs", headers=admin, json={"judge_id": judge.json()["id"], "rubric": "milo-qa"})
        assert started.status_code == 202, started.text
        view = wait_for_run(client, f"{url}?limit=1000", admin)
        run = view["run"]
        assert run["status"] == "done", run
        assert run["rubric"] == "milo-qa@1" and run["progress"] == 1.0

        texts = {r.id: r.text for r in stored.values()}
        assert view["reasons"] == len(texts) and len(view["rows"]) == len(texts)
        for row in view["rows"]:
            text = texts[row["reason_id"]]
            assert row["reason"] == text
            assert row["judge"]["status"] == expected_status(text), text
            assert row["judge"]["score"] == expected_score(text), text
            if expected_status(text) is None:  # the unparseable answer is recorded as such, never guessed
                assert any(c["status"] == "unparseable" for c in row["judge"]["criteria"])
            else:
                assert all(c["explanation"].startswith("QA-EXPLAINED") for c in row["judge"]["criteria"])
        graded = [r for r in view["rows"] if r["judge"]["status"] is not None]
        assert run["detail"] == {
            "reasons": len(texts),
            "graded": len(graded),
            "passed": sum(r["judge"]["status"] == "PASSED" for r in graded),
        }

        # the admin grades the first 20 shown (a random sample): agreeing with the judge on all but 4 of them
        sample = graded[:20]
        assert len({r["judge"]["status"] for r in sample}) == 2, "the sample needs both verdicts"
        flip = {"PASSED": "REDO", "REDO": "PASSED"}
        mine = {}
        for index, row in enumerate(sample):
            mine[row["reason_id"]] = flip[row["judge"]["status"]] if index % 5 == 0 else row["judge"]["status"]
            graded_now = client.post(
                f"{url}/grades", headers=admin, json={"reason_id": row["reason_id"], "status": mine[row["reason_id"]]}
            )
            assert graded_now.status_code == 200, graded_now.text
        agreement = client.get(url, headers=admin).json()["agreement"]
        pairs = [(r["judge"]["status"], mine[r["reason_id"]]) for r in sample]
        assert agreement["n"] == 20
        assert agreement["agreement"]["count"] == 16 and agreement["agreement"]["share"] == pytest.approx(0.8)
        assert agreement["agreement"]["interval"] == pytest.approx(wilson(16, 20))
        assert agreement["cohen_kappa"] == pytest.approx(kappa(pairs))
        assert sum(agreement["table"][j][a] for j in ("PASSED", "REDO") for a in ("PASSED", "REDO")) == 20

        page = client.get(f"/admin/experiments/{experiment.id}/qa", headers={**admin, "Accept": "text/html"})
        assert page.status_code == 200
        assert "80.0%" in page.text and f"{kappa(pairs):.2f}" in page.text
        assert "QA-EXPLAINED" in page.text
        for body in (page.text, str(view), str(agreement)):
            assert SECRET not in body
    with Session(hub_env) as session:
        assert len(session.exec(select(RaterQaGrade)).all()) == len(texts)
