"""Experiments imported from the original ChatEval get readable titles ("Cakechat vs NCM (NCM, ChatEval 2019)")
and keep the original run id as a field (`original_run` in the experiment JSON); importing again adds nothing."""

from __future__ import annotations

import csv

from sqlmodel import Session, select

from hub.models import Experiment
from hub.services.human.experiment_results import experiment_json, systems_of
from hub.services.human.ratings_import import COLUMNS, import_chateval

ROWS = [  # votes.csv's own columns; two runs, one of them between the same two systems the other way round
    ("run-0172", "NCM", "Cakechat", "NCM", "3", "w1", "h1", "0", "12.5"),
    ("run-0172", "NCM", "Cakechat", "NCM", "4", "w2", "h1", "-1", ""),
    ("run-0188", "NCM", "NCM", "OpenNMT Seq2SeqAttn", "3", "w1", "h2", "1", "8"),
]


def test_imported_experiments_have_readable_titles_and_keep_the_run_id(hub_env, tmp_path):
    votes = tmp_path / "votes.csv"
    with votes.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(ROWS)
    with Session(hub_env) as session:
        created = import_chateval(session, votes)
        assert len(created) == 2
        shown = {}
        for experiment in session.exec(select(Experiment)):
            body = experiment_json(experiment, *systems_of(session, experiment))
            shown[body["original_run"]] = body["title"]
        assert shown == {
            "run-0172": "Cakechat vs NCM (NCM, ChatEval 2019)",
            "run-0188": "NCM vs OpenNMT Seq2SeqAttn (NCM, ChatEval 2019)",
        }
        assert import_chateval(session, votes) == []  # recognised by the run id, not the title


def test_an_imported_profile_points_to_its_human_results(hub_env, tmp_path):
    """An imported system has no automatic scores but has human results: its profile does not say "No results yet"."""
    from fastapi.testclient import TestClient

    from hub.models import System
    from hub.web.app import create_app

    votes = tmp_path / "votes.csv"
    with votes.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([COLUMNS, *ROWS])
    with Session(hub_env) as session:
        import_chateval(session, votes)
        cakechat = session.exec(select(System).where(System.name == "Cakechat")).one().id
    with TestClient(create_app()) as client:
        response = client.get(f"/systems/{cakechat}", headers={"Accept": "text/html"})
    assert response.status_code == 200, response.text
    assert "No results yet" not in response.text
    assert 'No automatic scores: its results are the <a href="#human">human evaluation</a> below.' in response.text
    assert '<h2 id="human">Human evaluation</h2>' in response.text
