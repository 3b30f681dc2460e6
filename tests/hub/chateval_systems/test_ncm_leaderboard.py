"""The real ChatEval systems on /leaderboards/ncm: fetched from the shared folder as a mirror, votes and the
original responses imported through the real command, IRT refitted; the page and its JSON twin show the original
systems with automatic scores, human win rates and IRT abilities side by side, strongest evidence first."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import settings
from hub.models import Submission, System
from hub.web.app import create_app

CHATEVAL = Path(sys.executable).parent / "chateval"
ORIGINAL = {"NCM": "ncm_original", "Cakechat": "cakechat", "OpenNMT Seq2SeqAttn": "opennmt_seq2seq"}


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(CHATEVAL), *args], capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    if check:
        assert done.returncode == 0, done.stderr[-2000:]
    return done


def _independent_win_rate(votes: Path, system: str) -> float:
    """Wins / (wins + losses) of `system` over every NCM run it was in, ties left out, read here from votes.csv."""
    won = lost = 0
    with votes.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["evalset"] != "NCM" or system not in (row["model_1"], row["model_2"]) or row["vote"] == "-1":
                continue
            winner = row["model_1"] if row["vote"] == "0" else row["model_2"]
            won, lost = won + (winner == system), lost + (winner != system)
    return won / (won + lost)


@pytest.fixture(scope="module")
def ncm_hub(shared_data, tmp_path_factory):
    """A hub with the ncm set, the 20 imported runs, the original responses attached and the IRT fit published."""
    root = tmp_path_factory.mktemp("ncm-hub")
    saved = {k: os.environ.get(k) for k in ("CHATEVAL_HOME", "HUB_DATA_DIR", "HUB_WORD_VECTORS")}
    os.environ.update(CHATEVAL_HOME=str(root / "home"), HUB_DATA_DIR=str(root / "hub"), HUB_WORD_VECTORS="gensim-test")
    try:
        _cli("datasets", "fetch", "ncm", "--mirror", str(shared_data))
        votes = ["--votes", str(shared_data / "votes.csv"), "--prompts-dir", str(shared_data / "prompts")]
        imported = _cli("ratings", "import-chateval", *votes, "--responses-dir", str(shared_data / "responses"))
        again = _cli("ratings", "import-chateval", *votes, "--responses-dir", str(shared_data / "responses"))
        _cli("ratings", "refit-irt", "--dataset", "ncm", "--bootstrap", "20")
        yield {"root": root, "imported": imported.stdout, "again": again.stdout}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def client(ncm_hub, monkeypatch):
    from evaluation.settings import get_settings as toolkit_settings
    from hub import db, storage

    monkeypatch.setenv("CHATEVAL_HOME", str(ncm_hub["root"] / "home"))
    monkeypatch.setenv("HUB_DATA_DIR", str(ncm_hub["root"] / "hub"))
    monkeypatch.setenv("HUB_WORD_VECTORS", "gensim-test")
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, toolkit_settings):
        cached.cache_clear()
    with TestClient(create_app()) as test_client:
        yield test_client
    db.get_engine().dispose()
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, toolkit_settings):
        cached.cache_clear()


def test_original_systems_side_by_side(client, shared_data, run_cli):
    board = client.get("/api/leaderboards/ncm").json()
    assert board["sort"] == "irt" and board["order"] == "desc"  # the strongest published evidence, not BLEU-2
    rows = {row["system_name"]: row for row in board["rows"]}
    assert len(rows) == len(board["rows"]) == 11  # 10 systems with votes, ParlAI with responses only
    for name, stem in ORIGINAL.items():
        row = rows[name]
        assert row["irt"]["ability"] is not None and row["human"]["human:all"]["win_rate"] is not None
        expected = _independent_win_rate(shared_data / "votes.csv", name)
        assert row["human"]["human:all"]["win_rate"] == pytest.approx(expected, abs=1e-12)
        # `chateval evaluate` through its real entry point, in this process (three subprocesses each paid the
        # toolkit's start-up and gensim's import)
        responses = shared_data / "responses" / f"ncm__{stem}.txt"
        arguments = ["--responses", responses, "--allow-empty", "--embeddings", _gensim(), "--json"]
        evaluated = run_cli("evaluate", "--dataset", "ncm", *arguments)
        assert evaluated.exit_code == 0, evaluated.stderr[-2000:]
        toolkit = json.loads(evaluated.stdout)
        for metric in toolkit["metrics"]:
            if "corpus" in metric:
                assert row["scores"][metric["metric"]]["corpus"] == pytest.approx(metric["corpus"], abs=1e-12)
    assert rows["Human1"]["scores"] == {} and rows["Human1"]["irt"]["ability"] is not None  # empty automatic cells
    assert rows["ParlAI Seq2Seq PersonaChat"]["irt"] is None and rows["ParlAI Seq2Seq PersonaChat"]["scores"]
    abilities = [row["irt"]["ability"] for row in board["rows"] if row["irt"]]
    assert abilities == sorted(abilities, reverse=True)
    page = client.get("/leaderboards/ncm").text
    for text in ("Cakechat", "OpenNMT Seq2SeqAttn", "IRT ability", "human win rate (all comparisons)", "bleu-2"):
        assert text in page


def _gensim() -> str:
    from hub.services.platform.word_vectors import gensim_test_vectors

    return str(gensim_test_vectors())


def test_one_system_per_original_name(client, ncm_hub):
    from hub.db import get_engine

    with Session(get_engine()) as session:
        for name in ORIGINAL:
            systems = session.exec(select(System).where(System.name == name)).all()
            assert len(systems) == 1
            submissions = session.exec(select(Submission).where(Submission.system_id == systems[0].id)).all()
            assert [s.status for s in submissions] == ["evaluated"]
    assert ncm_hub["imported"].count(": attached, submission") == 4
    assert "imported 0 experiment(s)" in ncm_hub["again"] and ncm_hub["again"].count("already attached") == 4


def _independent_pair_counts(shared_data: Path) -> dict[tuple[str, str], list[int]]:
    """(system, other) -> [won, tied, lost] of `system` over every NCM vote between the two, read from votes.csv,
    plus one tie for each prompt a run never showed (the original hid pairs with identical responses)."""
    counts: dict[tuple[str, str], list[int]] = {}
    shown: dict[tuple[str, str, str], set[str]] = {}
    with (shared_data / "votes.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["evalset"] != "NCM":
                continue
            one, two = row["model_1"], row["model_2"]
            outcome = {"-1": 1, "0": 0}.get(row["vote"], 2)  # from model_1's side: 0 won, 1 tied, 2 lost
            counts.setdefault((one, two), [0, 0, 0])[outcome] += 1
            counts.setdefault((two, one), [0, 0, 0])[2 - outcome] += 1
            shown.setdefault((row["run"], one, two), set()).add(row["prompt"])
    prompts = len((shared_data / "prompts" / "ncm.txt").read_text().splitlines())
    for (_, one, two), judged in shown.items():
        counts[(one, two)][1] += prompts - len(judged)
        counts[(two, one)][1] += prompts - len(judged)
    return counts


def test_win_rate_matrix_matches_the_original_votes_pair_by_pair(client, shared_data):
    board = client.get("/api/leaderboards/ncm").json()
    matrix = board["win_matrix"]
    names = {s["id"]: s["name"] for s in matrix["systems"]}
    assert len(names) == 10 and "ParlAI Seq2Seq PersonaChat" not in names.values()  # no votes: not in the matrix
    assert [s["id"] for s in matrix["systems"]] == [row["system_id"] for row in board["rows"] if row["irt"]]
    expected = _independent_pair_counts(shared_data)
    compared = 0
    for i, a in enumerate(matrix["systems"]):
        for j, b in enumerate(matrix["systems"]):
            cell, want = matrix["cells"][i][j], expected.get((a["name"], b["name"]))
            if want is None:
                assert cell is None
                continue
            compared += 1
            assert [cell["wins"], cell["ties"], cell["losses"]] == want and cell["n"] == sum(want)
            assert cell["win_rate"] == pytest.approx(want[0] / (want[0] + want[2]), abs=1e-12)
    assert compared == len([pair for pair in expected if pair[0] in names.values()]) > 10
    page = client.get("/leaderboards/ncm").text
    assert '<table class="win-matrix">' in page and "n=1,027" in page  # NCM against Cakechat, both runs pooled


def test_prompt_page_shows_every_public_systems_response(client, shared_data):
    prompt = client.get("/api/datasets/ncm/prompts/1").json()
    expected = {
        name: (shared_data / "responses" / f"ncm__{stem}.txt").read_text().splitlines()[1]
        for name, stem in {**ORIGINAL, "ParlAI Seq2Seq PersonaChat": "parlai_seq2seq_personachat"}.items()
    }
    assert {answer["system_name"]: answer["response"] for answer in prompt["responses"]} == expected
    page = client.get("/datasets/ncm/prompts/1").text
    for answer in prompt["responses"]:
        assert f'<a href="/systems/{answer["system_id"]}">{answer["system_name"]}</a>' in page


def test_overview_counts_every_system_with_a_published_result(client):
    overview = client.get("/api/overview").json()
    assert overview["system_count"] == 11  # four with responses, seven with only human and IRT results
    ncm = next(d for d in overview["datasets"] if d["name"] == "ncm")
    assert ncm["entries"] == 11
    assert "<strong>11</strong> systems evaluated" in client.get("/").text
