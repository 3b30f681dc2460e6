"""Raw ratings: the import of the original ChatEval judgements, the public `ratings` download (no private data,
exclusions flagged, automatic ties flagged) and the `chateval export` snapshot to a folder and to S3."""

from __future__ import annotations

import csv
import io
import json

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from hub.models import Experiment, Rater, Rating, System
from hub.services.human import assignments, experiment_access, raters
from hub.services.human.ratings_import import import_chateval, read_votes
from hub.web.app import create_app
from tests.hub.conftest import new_experiment


def _jsonl(text: str) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in text.splitlines() if line]
    return lines[0], lines[1:]


def test_the_real_chateval_judgements_import_once(hub_env, shared_data):
    with Session(hub_env) as session:
        created = import_chateval(session, shared_data / "votes.csv", shared_data / "prompts")
        assert len(created) == 20
        judged = session.exec(select(func.count()).select_from(Rating).where(Rating.auto_tie == False)).one()  # noqa: E712
        assert judged == 10_704
        with (shared_data / "votes.csv").open() as handle:
            rows = list(csv.DictReader(handle))
        # Every vote kept with its meaning: 0 = model_1 (A) better, 1 = model_2 (B), -1 tie.
        expected = {"A": sum(r["vote"] == "0" for r in rows), "B": sum(r["vote"] == "1" for r in rows)}
        for outcome, count in expected.items():
            query = select(func.count()).select_from(Rating).where(Rating.outcome == outcome)
            assert session.exec(query).one() == count
        assert session.exec(select(func.count()).select_from(Rater)).one() == len({r["worker"] for r in rows})
        # Prompts a run never showed are automatic ties (the original hid identical pairs).
        shown = {(r["run"], r["prompt"]) for r in rows}
        runs = {r["run"] for r in rows}
        autos = session.exec(select(func.count()).select_from(Rating).where(Rating.auto_tie == True)).one()  # noqa: E712
        assert autos == 200 * len(runs) - len(shown)
        assert import_chateval(session, shared_data / "votes.csv", shared_data / "prompts") == []
        assert len(session.exec(select(Experiment)).all()) == 20


def test_a_bad_votes_file_is_refused_with_its_line_and_nothing_imported(hub_env, tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text(
        "run,evalset,model_1,model_2,prompt,worker,hit,vote,assign_secs\n"
        "R,NCM,a,b,1,W1,h1,0,10\n"
        "R,NCM,a,b,2,W1,h1,2,10\n"
    )
    from hub.errors import UnprocessableInput

    with pytest.raises(UnprocessableInput, match=r"votes.csv, line 3: vote must be 0, 1 or -1"):
        read_votes(path)
    with Session(hub_env) as session, pytest.raises(UnprocessableInput):
        import_chateval(session, path)
    with Session(hub_env) as session:
        assert session.exec(select(Experiment)).all() == []


def _rate(engine, experiment_id, who: str, choice: str = "left"):
    with Session(engine) as session:
        experiment = session.get(Experiment, experiment_id)
        rater = raters.rater_for(session, "mturk", who)
        assignment = assignments.claim_task(session, experiment, rater)
        choices = {item.id: choice for item in assignments.task_items(session, assignment.task_id)}
        assignments.submit(session, assignment, choices)
        return rater.id


def test_the_ratings_download_is_complete_and_keeps_worker_ids_private(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines)
    worker = "A1B2C3D4E5SECRETWORKER"
    rater_id = _rate(hub_env, experiment.id, worker)
    _rate(hub_env, experiment.id, "ANOTHERWORKER", "tie")
    with Session(hub_env) as session:
        raters.set_excluded(session, admin_user, rater_id, excluded=True, reason="always left")
    client = TestClient(create_app())
    jsonl = client.get("/api/downloads/ratings.jsonl")
    assert jsonl.status_code == 200
    header, rows = _jsonl(jsonl.text)
    assert header["kind"] == "ratings" and header["fields"][0] == "rating_id"
    with Session(hub_env) as session:
        assert len(rows) == session.exec(select(func.count()).select_from(Rating)).one()
    assert worker not in jsonl.text and "ANOTHERWORKER" not in jsonl.text
    flagged = [r for r in rows if r["excluded"]]
    assert flagged and {r["exclusion_reason"] for r in flagged} == {"always left"}
    assert {r["backend"] for r in rows} == {"mturk"}
    for row in rows:
        if row["item_kind"] == "pair" and row["choice"] == "left":
            assert row["outcome"] == row["left"]
    csv_text = client.get("/api/downloads/ratings.csv").text
    assert worker not in csv_text
    assert len(list(csv.DictReader(io.StringIO(csv_text)))) == len(rows)


def test_ratings_of_a_private_system_are_not_published(hub_env, admin_user, baselines):
    with Session(hub_env) as session:
        session.get(System, baselines["retrieval"]).is_baseline = False
        hidden = session.get(System, baselines["retrieval"])
        hidden.is_public = False
        session.add(hidden)
        session.commit()
    experiment = new_experiment(hub_env, admin_user, baselines)
    _rate(hub_env, experiment.id, "W1")
    client = TestClient(create_app())
    _, rows = _jsonl(client.get("/api/downloads/ratings.jsonl").text)
    assert rows == []
    assert client.get(f"/api/experiments/{experiment.id}").status_code == 404
    with Session(hub_env) as session:
        assert not experiment_access.experiment_is_public(session, session.get(Experiment, experiment.id))


def test_export_writes_every_download_and_a_manifest(hub_env, admin_user, baselines, tmp_path, run_cli):
    experiment = new_experiment(hub_env, admin_user, baselines)
    _rate(hub_env, experiment.id, "W9")
    result = run_cli("export", "--out", tmp_path / "snap")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((tmp_path / "snap" / "latest" / "manifest.json").read_text())
    assert "ratings.jsonl" in manifest["files"] and "ratings.csv" in manifest["files"]
    import hashlib

    for name, sha in manifest["files"].items():
        assert hashlib.sha256((tmp_path / "snap" / "latest" / name).read_bytes()).hexdigest() == sha
    assert not [p for p in (tmp_path / "snap").iterdir() if p.name.startswith(".")]


def test_export_publishes_the_snapshot_to_s3(hub_env, admin_user, baselines, monkeypatch, run_cli):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        for name, value in (
            ("AWS_ACCESS_KEY_ID", "t"),
            ("AWS_SECRET_ACCESS_KEY", "t"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ):
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("HUB_S3_ENDPOINT_URL", endpoint)
        from hub import settings

        settings.get_settings.cache_clear()
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket="public-data")
        experiment = new_experiment(hub_env, admin_user, baselines)
        _rate(hub_env, experiment.id, "W7")
        result = run_cli("export", "--s3", "s3://public-data/snapshots/latest")
        assert result.exit_code == 0, result.stderr
        keys = {o["Key"] for o in client.list_objects_v2(Bucket="public-data")["Contents"]}
        version = json.loads(client.get_object(Bucket="public-data", Key="snapshots/latest/latest.json")["Body"].read())
        prefix = f"snapshots/latest/{version['version']}"
        assert f"{prefix}/ratings.jsonl" in keys and f"{prefix}/manifest.json" in keys
        body = client.get_object(Bucket="public-data", Key=f"{prefix}/ratings.jsonl")["Body"].read().decode()
        assert "W7" not in body and len(body.splitlines()) > 1
    finally:
        server.stop()


def test_the_imported_chateval_experiments_show_the_independent_agreement_figures(hub_env, shared_data, run_cli):
    """Through the CLI import and the experiment pages' own numbers (experiment_results.results), every run's
    Cohen's and Fleiss' kappa equal scikit-learn's and statsmodels' on the raw votes.csv rows of that run."""
    from hub.services.human.experiment_results import results
    from tests.test_agreement_real_data import by_run, first_votes, independent_cohen, independent_fleiss

    imported = run_cli("ratings", "import-chateval", "--votes", shared_data / "votes.csv")
    assert imported.exit_code == 0 and "imported 20 experiment(s)" in imported.stdout
    with (shared_data / "votes.csv").open(newline="") as handle:
        runs = by_run(list(csv.DictReader(handle)))
    with Session(hub_env) as session:
        experiments_by_run = {e.settings["run"]: e for e in session.exec(select(Experiment))}
        for run, e in experiments_by_run.items():  # readable titles; the original run id kept in settings
            assert e.title.endswith(f"({e.dataset_name.upper()}, ChatEval 2019)") and " vs " in e.title, run
        assert set(experiments_by_run) == set(runs)
        for run, rows in runs.items():
            shown = results(session, experiments_by_run[run])["agreement"]["with_excluded"]
            first = first_votes(rows)
            cohen, pairs = independent_cohen(first)
            fleiss, items, _ = independent_fleiss(first)
            assert shown["cohen_kappa"] == pytest.approx(cohen, abs=1e-9), run
            assert shown["rater_pairs"] == pairs and shown["fleiss_items"] == items
            assert shown["fleiss_kappa"] == pytest.approx(fleiss, abs=1e-9), run
    again = run_cli("ratings", "import-chateval", "--votes", shared_data / "votes.csv")
    assert again.exit_code == 0 and "imported 0 experiment(s)" in again.stdout
