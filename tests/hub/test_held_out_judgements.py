"""Held-out judgements everywhere a public number comes from: the judgements of a rater the screening flagged (any
flag, the burst flag for raters created in a burst from one client included) wait for an admin's decision on the
experiment page, in the ratings download (a `held_out` flag per row, beside `excluded`; the burst count itself stays
on the admin's screening table, see tests/hub/test_ratings_download_privacy.py) and in the published IRT fit, which
leaves held-out rows out as it leaves excluded ones, so that `chateval irt fit` on the download still reproduces every
published number. An admin's include decision releases the judgements and enqueues the dataset's refit."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import load_dataset
from hub import queue
from hub.models import Experiment, Rater
from hub.services.human import assignments, raters
from hub.services.statistics import irt_fits
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, human_paced, new_experiment
from tests.hub.test_analyze_ratings_page import _check_page_against_download

SIDE = {"A": ("left", "right"), "B": ("right", "left")}
BOOTSTRAP = 30


def _rate(engine, experiment_id: int, rater_ids: list[int], seed: int, *, always_left: frozenset[int] = frozenset()):
    """The raters take turns claiming tasks until none is left. Careful raters answer a per-prompt truth (mostly)
    at a person's pace; raters in `always_left` pick the left reply at once."""
    rng = random.Random(seed)
    truth: dict[str, str] = {}
    idle = 0
    while idle < len(rater_ids):
        idle = 0
        for rater_id in rater_ids:
            with Session(engine) as session:
                experiment = session.get(Experiment, experiment_id)
                assignment = assignments.claim_task(session, experiment, session.get(Rater, rater_id))
                if assignment is None:
                    idle += 1
                    continue
                choices = {}
                for item in assignments.task_items(session, assignment.task_id):
                    if rater_id in always_left:
                        choices[item.id] = "left"
                        continue
                    majority = truth.setdefault(item.prompt_id, rng.choices(["A", "B", "tie"], [0.5, 0.3, 0.2])[0])
                    outcome = item.expected or (majority if rng.random() < 0.85 else rng.choice(["A", "B", "tie"]))
                    choices[item.id] = "tie" if outcome == "tie" else SIDE[outcome][0 if item.left_is_a else 1]
                if rater_id not in always_left:
                    human_paced(assignment)
                assignments.submit(session, assignment, choices)


def _download(client: TestClient, fmt: str, experiment_id: int) -> list[dict]:
    response = client.get(f"/api/downloads/ratings.{fmt}")
    assert response.status_code == 200, response.text
    if fmt == "jsonl":
        lines = response.text.splitlines()
        header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
        assert "held_out" in header["fields"]
    else:
        rows = list(csv.DictReader(io.StringIO(response.text)))
    return [r for r in rows if str(r["experiment_id"]) == str(experiment_id)]


def test_raters_created_in_a_burst_are_held_out_on_the_page_and_flagged_in_the_download(
    hub_env, people, admin_user, baselines, tmp_path
):
    experiment = new_experiment(
        hub_env, admin_user, baselines, prompt_ids=load_dataset(DATASET).prompt_ids[:12], raters_per_prompt=5
    )
    with Session(hub_env) as session:
        burst = [
            raters.rater_for(session, "hub", f"sock{i}", client_hash=raters.client_hash("10.3.0.1")).id
            for i in range(4)
        ]
        single = raters.rater_for(session, "hub", "alone", client_hash=raters.client_hash("10.3.0.2")).id
        hashes = {rater_id: session.get(Rater, rater_id).public_hash for rater_id in [*burst, single]}
    _rate(hub_env, experiment.id, [*burst, single], seed=5)
    with TestClient(create_app()) as client:
        admin = client.get(f"/api/experiments/{experiment.id}", headers=auth(people["admin"])).json()
        codes = {q["rater"]: q["flag_codes"] for q in admin["raters"]}
        assert codes == {**{hashes[b]: ["client_burst"] for b in burst}, hashes[single]: []}  # the burst flag only
        assert admin["held_out"]["rater_hashes"] == sorted(hashes[b] for b in burst)

        public = client.get(f"/api/experiments/{experiment.id}").json()
        assert public["held_out"]["raters"] == 4
        schema = client.get("/downloads", headers={"Accept": "text/html"}).text
        assert "<code>held_out</code> (true while" in schema  # the field is documented
        for fmt, true in (("jsonl", True), ("csv", "true")):
            rows = _download(client, fmt, experiment.id)
            held = {r["rater"] for r in rows if r["held_out"] == true}
            assert held == {hashes[b] for b in burst}, fmt
            pairs = [r for r in rows if r["item_kind"] == "pair" and r["held_out"] != true]
            assert public["summary"]["n"] == len(pairs), fmt  # the page counts exactly the rows not held out

        page, report = _check_page_against_download(client, people["admin"], experiment.id, tmp_path)
        assert report.held_out == {"raters": 4, "judgements": page["held_out"]["judgements"]}
        assert page["held_out"]["judgements"] > 0
        # the burst flag is admin-only (it rests on client addresses): the script sees the rows held out, not why
        assert not any(q.flagged for q in report.screening)

        released = client.post(
            f"/api/raters/{burst[0]}/exclusion", json={"excluded": False}, headers=auth(people["admin"])
        )
        assert released.status_code == 200, released.text
        rows = _download(client, "jsonl", experiment.id)
        assert {r["rater"] for r in rows if r["held_out"]} == {hashes[b] for b in burst[1:]}
        assert client.get(f"/api/experiments/{experiment.id}").json()["held_out"]["raters"] == 3


@pytest.fixture
def refits(monkeypatch) -> list[str]:
    """The datasets whose refit was enqueued."""
    enqueued: list[str] = []
    monkeypatch.setattr(queue, "enqueue_refit", enqueued.append)
    return enqueued


def _offline_refit(client: TestClient, run_cli, tmp_path, stored: dict) -> dict:
    download = client.get("/api/downloads/ratings.jsonl")
    assert download.status_code == 200
    path = tmp_path / "ratings.jsonl"
    path.write_text(download.text, encoding="utf-8")
    out = tmp_path / "offline.json"
    ran = run_cli(
        "irt", "fit", "--ratings", path, "--dataset", DATASET, "--anchor", stored["anchor_id"],
        "--seed", stored["signature"]["bootstrap_seed"], "--bootstrap", stored["signature"]["bootstrap"],
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    return json.loads(out.read_text())


def _without_run_facts(report: dict) -> dict:
    from evaluation.irt.result import UNSIGNED

    return {**report, "signature": {k: v for k, v in report["signature"].items() if k not in UNSIGNED}}


def test_the_fit_leaves_held_out_judgements_out_and_the_download_refits_it_exactly(
    hub_env, people, admin_user, baselines, tmp_path, run_cli, refits
):
    experiment = new_experiment(
        hub_env, admin_user, baselines, prompt_ids=load_dataset(DATASET).prompt_ids[:30], raters_per_prompt=3
    )
    with Session(hub_env) as session:
        careful = [raters.rater_for(session, "hub", f"careful-{i}").id for i in range(3)]
        clicker = raters.rater_for(session, "hub", "clicker").id
    _rate(hub_env, experiment.id, [clicker, *careful], seed=9, always_left=frozenset({clicker}))

    with TestClient(create_app()) as client:
        rows = [r for r in _download(client, "jsonl", experiment.id) if r["item_kind"] == "pair"]
        held = [r for r in rows if r["held_out"]]
        assert held and {r["rater"] for r in held} == {client.get(f"/api/experiments/{experiment.id}", headers=auth(
            people["admin"])).json()["held_out"]["rater_hashes"][0]}  # fmt: skip
        counted = sum(1 for r in rows if not r["held_out"] and not r["excluded"] and not r["auto_tie"])

        first = irt_fits.refit(hub_env, DATASET, bootstrap=BOOTSTRAP)
        with Session(hub_env) as session:
            fit = irt_fits.latest_fit(session, DATASET)
            assert fit.id == first and fit.n_judgements == counted  # the clicker's judgements are not in it
            stored = fit.report
        offline = _offline_refit(client, run_cli, tmp_path, stored)
        assert _without_run_facts(offline) == _without_run_facts(stored)

        released = client.post(
            f"/api/raters/{clicker}/exclusion", json={"excluded": False}, headers=auth(people["admin"])
        )
        assert released.status_code == 200, released.text
        assert refits == [DATASET]  # the decision changes the public judgements: the dataset's refit is enqueued
        second = irt_fits.refit(hub_env, DATASET, bootstrap=BOOTSTRAP)
        assert second is not None and second != first
        with Session(hub_env) as session:
            fit = irt_fits.latest_fit(session, DATASET)
            assert fit.n_judgements == counted + sum(1 for r in held if not r["auto_tie"])
            stored = fit.report
        offline = _offline_refit(client, run_cli, tmp_path, stored)
        assert _without_run_facts(offline) == _without_run_facts(stored)
        assert not any(r["held_out"] for r in _download(client, "jsonl", experiment.id))
