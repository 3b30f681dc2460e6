"""From registering a judge to the prediction-powered ranking, through the real API, the real job queue (an
in-process consumer on the SQLite queue), the real client and the real local endpoint server playing a judge:
rubric scores and explanations, judge win rates, the report card and PPI intervals, and the key nowhere."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from evaluation.llm.server import LocalChatServer
from hub.models import AuditEntry, JudgeJudgement, Rating
from hub.settings import get_settings
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, migrated_hub
from tests.hub.judging.helpers import (
    KEY_ENV,
    SECRET,
    expected_win_rate,
    explanation_of,
    grade_of,
    judge_responder,
    judged_hub,
)

HTML = {"Accept": "text/html"}


@pytest.fixture(params=["sqlite", "postgresql"])
def hub_env(request, tmp_path, monkeypatch):
    """The conftest's hub, on SQLite and on a fresh PostgreSQL database (skipped when PostgreSQL is down)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    yield from migrated_hub(tmp_path, monkeypatch, url)


@pytest.fixture
def judge_server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with LocalChatServer(responder=judge_responder, expected_key=SECRET) as server:
        yield server


def test_a_submission_gets_rubric_scores_judge_win_rates_a_report_card_and_a_ppi_ranking(
    hub_env, people, baselines, judge_server
):
    dataset = load_dataset(DATASET)
    admin = people["admin"]
    mine = [p.references[0] for p in dataset.prompts]
    with TestClient(create_app(embedded_worker=True)) as client:
        hub = judged_hub(client, hub_env, people, baselines, judge_server.base_url)
        run, judge_id, system_id = hub["run"], hub["judge_id"], hub["system_id"]
        assert run["status"] == "done", run
        assert run["progress"] == 1.0
        with Session(hub_env) as session:
            judge_rows = session.exec(select(JudgeJudgement)).all()
            human_ratings = session.exec(select(Rating)).all()
        assert len(judge_rows) == 2 * len(dataset)  # against both baselines, every prompt, kept apart from humans
        assert all(r.rater.startswith("judge:rule-judge|pairwise-v1|127.0.0.1") for r in judge_rows)
        assert human_ratings and all(r.rater_id is not None or r.auto_tie for r in human_ratings)

        board = client.get(f"/api/leaderboards/{DATASET}").json()
        row = next(r for r in board["rows"] if r["system_id"] == system_id)
        [rubric_column] = board["rubric_columns"]
        assert rubric_column["rubric"] == "helpfulness@1"
        cell = row["rubrics"][rubric_column["key"]]
        grades = [grade_of(r) for r in mine]
        assert cell["graded"] == len(dataset)
        assert cell["score"] == pytest.approx(sum(g / 5 for g in grades) / len(grades))
        assert cell["pass_rate"] == pytest.approx(sum(g / 5 >= 0.7 for g in grades) / len(grades))
        [judge_column] = board["judge_columns"]
        assert judge_column["card_url"] == f"/judges/{DATASET}#judge-{judge_id}"
        others = [_responses(hub_env, baselines[name]) for name in ("echo", "retrieval")]
        win = row["judges"][judge_column["key"]]
        assert win["n"] == 2 * len(dataset)
        assert win["win_rate"] == pytest.approx(expected_win_rate(mine, others))
        assert "is-question" in row["scores"]  # the function metric, per response, as a leaderboard column

        page = client.get(f"/leaderboards/{DATASET}", headers=HTML).text
        assert "helpfulness@1" in page and f"/judges/{DATASET}#judge-{judge_id}" in page

        profile_page = client.get(f"/systems/{system_id}", headers=HTML).text
        assert explanation_of(mine[0]) in profile_page and "PASSED" in profile_page

        cards = client.get(f"/api/judges/{DATASET}").json()
        [entry] = cards["judges"]
        card = entry["card"]
        assert card is not None, entry["problem"]
        assert card["position_consistency"]["share"] == 1.0  # a length judge never flips with the order
        assert card["human_agreement"]["items"] == 40
        assert card["coverage"]["graded"] + card["coverage"]["auto_ties"] == card["coverage"]["pairs"]
        judges_page = client.get(f"/judges/{DATASET}", headers=HTML).text
        assert f'id="judge-{judge_id}"' in judges_page and "Position consistency" in judges_page

        ppi = client.get(f"/api/ppi/{DATASET}").json()
        report = ppi["report"]
        assert report is not None, ppi["problem"]
        assert {s["system_id"] for s in report["systems"]} == {system_id, baselines["echo"], baselines["retrieval"]}
        for system in report["systems"]:
            low, high = system["ppi"]["interval"]
            assert low <= system["ppi"]["estimate"] <= high
            human_low, human_high = system["human"]["interval"]
            if not system["anchor"]:  # a real interval, never wider than the humans' own (power tuning)
                assert 0 < high - low <= human_high - human_low + 1e-9
        assert report["n_human_votes"] == 2 * 20 * 3
        assert report["effective_human_n"] is not None
        ppi_page = client.get(f"/ppi/{DATASET}", headers=HTML).text
        assert "Effective human sample size" in ppi_page and report["method"] in ppi_page

        # The key appears nowhere: API, pages, audit, downloads, run details, the call cache.
        seen = [
            client.get("/api/admin/judges", headers=auth(admin)).text,
            client.get("/admin/judging", headers={**HTML, **auth(admin)}).text,
            client.get("/api/admin/audit", headers=auth(admin)).text,
            client.get(f"/api/judges/{DATASET}/judgements").text,
            judges_page,
            ppi_page,
            page,
            profile_page,
            str(run),
        ]
        assert all(SECRET not in text for text in seen)

        # Public pages: served from the read side's cache with an ETag, and 304 while nothing public changed.
        for url in (f"/judges/{DATASET}", f"/ppi/{DATASET}", f"/api/judges/{DATASET}", f"/api/ppi/{DATASET}"):
            first = client.get(url, headers=HTML if not url.startswith("/api/") else {})
            assert first.status_code == 200 and first.headers["etag"].startswith('W/"v'), url
            again = client.get(url, headers={"If-None-Match": first.headers["etag"]})
            assert again.status_code == 304, url
        with Session(hub_env) as session:
            assert all(SECRET not in str(e.detail) for e in session.exec(select(AuditEntry)))
        cache_files = list(get_settings().data_dir.glob("llm-cache.sqlite3*"))
        assert cache_files and all(SECRET.encode() not in f.read_bytes() for f in cache_files)


def _responses(engine, system_id: int) -> list[str]:
    from hub.models import Submission
    from hub.services.submissions.results import read_responses
    from hub.storage import get_storage

    with Session(engine) as session:
        submission = session.exec(select(Submission).where(Submission.system_id == system_id)).first()
        return read_responses(get_storage(), submission, load_dataset(DATASET))
