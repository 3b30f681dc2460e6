"""Nothing derived from raters' client addresses leaves the hub through a public view: the ratings download (JSONL
and CSV) carries no `client_burst` count and no client hash, nor do an experiment's public page and JSON for an
anonymous visitor. The burst count links raters created from one client, so it stays an admin-only screening signal:
the admin's experiment page and JSON still show it."""

from __future__ import annotations

import csv
import io
import json
import re

from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import load_dataset
from hub.models import Rater
from hub.services.human import raters
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, new_experiment
from tests.hub.test_held_out_judgements import _rate

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
BURST_ADDRESS, SINGLE_ADDRESS = "10.3.0.1", "10.3.0.2"


def _rows(text: str, fmt: str) -> tuple[list[str], list[dict]]:
    if fmt == "jsonl":
        header, *lines = text.splitlines()
        return json.loads(header)["fields"], [json.loads(line) for line in lines]
    reader = csv.DictReader(io.StringIO(text))
    return list(reader.fieldnames or []), list(reader)


def _assert_private_data_absent(text: str, private: list[str], where: str) -> None:
    for value in private:
        assert value not in text, f"{where} contains {value!r}"


def test_no_public_view_carries_client_bursts_or_client_hashes(hub_env, people, admin_user, baselines):
    experiment = new_experiment(
        hub_env, admin_user, baselines, prompt_ids=load_dataset(DATASET).prompt_ids[:6], raters_per_prompt=5
    )
    burst_hash, single_hash = raters.client_hash(BURST_ADDRESS), raters.client_hash(SINGLE_ADDRESS)
    with Session(hub_env) as session:
        burst = [raters.rater_for(session, "hub", f"sock{i}", client_hash=burst_hash).id for i in range(4)]
        single = raters.rater_for(session, "hub", "alone", client_hash=single_hash).id
        assert {session.get(Rater, r).client_hash for r in [*burst, single]} == {burst_hash, single_hash}
    _rate(hub_env, experiment.id, [*burst, single], seed=3)
    private = ["client_burst", "client_hash", burst_hash, single_hash, BURST_ADDRESS, SINGLE_ADDRESS]

    with TestClient(create_app()) as client:
        for fmt in ("jsonl", "csv"):
            response = client.get(f"/api/downloads/ratings.{fmt}")
            assert response.status_code == 200, response.text
            fields, rows = _rows(response.text, fmt)
            mine = [r for r in rows if str(r["experiment_id"]) == str(experiment.id)]
            assert len(mine) > 0 and any(r["held_out"] in (True, "true") for r in mine), fmt  # the burst is held out
            assert "held_out" in fields and "client_burst" not in fields, fmt
            assert all("client_burst" not in row for row in rows), fmt
            _assert_private_data_absent(response.text, private, f"ratings.{fmt}")
        schema = client.get("/downloads", headers={"Accept": "text/html"}).text
        assert "<code>held_out</code> (true while" in schema and "client_burst" not in schema  # not a field

        public_json = client.get(f"/api/experiments/{experiment.id}")
        assert public_json.status_code == 200 and public_json.json()["held_out"]["raters"] == 4
        _assert_private_data_absent(public_json.text, private, "anonymous experiment JSON")
        public_page = client.get(f"/experiments/{experiment.id}", headers={"Accept": "text/html"})
        assert public_page.status_code == 200
        _assert_private_data_absent(public_page.text, private, "anonymous experiment page")

        admin_json = client.get(f"/api/experiments/{experiment.id}", headers=auth(people["admin"])).json()
        assert sorted(q["client_burst"] for q in admin_json["raters"]) == [1, 4, 4, 4, 4]  # admins still see it

    with TestClient(create_app(), headers={"accept": "text/html"}) as browser:
        token = CSRF_FIELD.search(browser.get("/login").text).group(1)
        form = {"csrf_token": token, "email": "admin@example.org", "password": "correct horse battery"}
        assert browser.post("/login", data=form, follow_redirects=False).status_code == 303
        page = browser.get(f"/admin/experiments/{experiment.id}")
        assert page.text.count("burst \N{MULTIPLICATION SIGN}4") == 4  # the admin's page keeps the burst flag
