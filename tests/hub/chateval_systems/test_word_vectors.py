"""embedding-average on the hub: the job scores it with the configured vectors exactly as `chateval evaluate
--embeddings` does, and a dataset without vectors says why on its leaderboard and profiles."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub import settings
from hub.models import Score, Submission, System
from hub.services.platform.word_vectors import GENSIM_TEST_LABEL, gensim_test_vectors, parse_per_dataset
from hub.services.submissions.attached import attach_responses
from hub.services.submissions.evaluation import EvaluationRun
from hub.services.submissions.submissions import UploadedFile
from hub.storage import get_storage
from hub.web.app import create_app

REPO = Path(__file__).resolve().parents[3]
DATASET = "hub-open-v1"
CHATEVAL = Path(sys.executable).parent / "chateval"
RESPONSES = REPO / "baselines" / DATASET / "retrieval.txt"


def _score(engine, name: str = "retrieval-copy") -> tuple[int, dict[str, Score]]:
    """A system with the retrieval baseline's responses, attached and scored by the evaluation job."""
    with Session(engine) as session:
        system = System(name=name, is_public=True)
        session.add(system)
        session.commit()
        upload = UploadedFile(RESPONSES.name, RESPONSES.read_bytes())
        submission, job = attach_responses(
            session, get_storage(), actor=None, system_id=system.id, dataset_name=DATASET, upload=upload
        )
        assert job is not None
        submission_id, system_id = submission.id, system.id
    assert EvaluationRun(engine, get_storage(), submission_id).run() == "evaluated"
    with Session(engine) as session:
        scores = session.exec(select(Score).where(Score.submission_id == submission_id)).all()
        return system_id, {score.metric: score for score in scores}


def _toolkit(vectors: Path) -> dict:
    """What the offline toolkit reports for the same file, as a real subprocess."""
    command = ["evaluate", "--dataset", DATASET, "--responses", str(RESPONSES), "--embeddings", str(vectors), "--json"]
    done = subprocess.run(
        [str(CHATEVAL), *command],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ.copy(),
        check=True,
    )
    return next(m for m in json.loads(done.stdout)["metrics"] if m["metric"] == "embedding-average")


def _configure(monkeypatch, **values: str) -> None:
    for name in ("HUB_WORD_VECTORS", "HUB_WORD_VECTORS_DATASETS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    settings.get_settings.cache_clear()


def test_job_scores_embedding_average_as_the_toolkit_does(hub_env, monkeypatch):
    vectors = gensim_test_vectors()
    _configure(monkeypatch, HUB_WORD_VECTORS=str(vectors))
    _, scores = _score(hub_env)
    expected = _toolkit(vectors)
    score = scores["embedding-average"]
    assert score.corpus == pytest.approx(expected["corpus"], abs=1e-12)
    assert score.signature == expected["signature"]
    sha256 = hashlib.sha256(vectors.read_bytes()).hexdigest()  # the vectors' checksum, computed here
    assert f"vectors_sha256={sha256[:16]}" in score.signature
    assert 0 < score.corpus <= 1


def test_per_dataset_vectors_win_over_the_hubs(hub_env, monkeypatch):
    _configure(monkeypatch, HUB_WORD_VECTORS="/nowhere/missing.kv", HUB_WORD_VECTORS_DATASETS=f"{DATASET}=gensim-test")
    _, scores = _score(hub_env)
    assert "embedding-average" in scores
    _configure(monkeypatch, HUB_WORD_VECTORS="gensim-test", HUB_WORD_VECTORS_DATASETS=f"{DATASET}=none")
    _, scores = _score(hub_env, "second")
    assert "embedding-average" not in scores


def test_missing_vectors_file_fails_the_run_naming_it(hub_env, monkeypatch):
    _configure(monkeypatch, HUB_WORD_VECTORS="/nowhere/missing.kv")
    with Session(hub_env) as session:
        system = System(name="x", is_public=True)
        session.add(system)
        session.commit()
        upload = UploadedFile(RESPONSES.name, RESPONSES.read_bytes())
        submission, _ = attach_responses(
            session, get_storage(), actor=None, system_id=system.id, dataset_name=DATASET, upload=upload
        )
    assert EvaluationRun(hub_env, get_storage(), submission.id).run() == "failed"
    with Session(hub_env) as session:
        error = session.get(Submission, submission.id).error
        assert "missing.kv" in error and "word vectors" in error


def test_without_vectors_pages_say_why(hub_env, monkeypatch):
    _configure(monkeypatch)
    system_id, scores = _score(hub_env)
    assert "embedding-average" not in scores and "bleu-2" in scores
    with TestClient(create_app()) as client:
        board = client.get(f"/api/leaderboards/{DATASET}").json()
        column = next(c for c in board["columns"] if c["metric"] == "embedding-average")
        assert "no word vectors configured" in column["unavailable"] and "HUB_WORD_VECTORS" in column["unavailable"]
        page = client.get(f"/leaderboards/{DATASET}").text
        assert "embedding-average: unavailable, no word vectors configured for hub-open-v1" in page
        profile = client.get(f"/api/systems/{system_id}").json()
        missing = profile["submissions"][0]["unavailable"]
        assert missing[0]["metric"] == "embedding-average" and "HUB_WORD_VECTORS" in missing[0]["reason"]
        assert "embedding-average: unavailable, no word vectors configured" in client.get(f"/systems/{system_id}").text


def test_demo_vectors_are_labelled_for_what_they_are(hub_env, monkeypatch):
    _configure(monkeypatch, HUB_WORD_VECTORS="gensim-test")
    _score(hub_env)
    with TestClient(create_app()) as client:
        board = client.get(f"/api/leaderboards/{DATASET}").json()
        column = next(c for c in board["columns"] if c["metric"] == "embedding-average")
        assert column["vectors"] == GENSIM_TEST_LABEL and "unavailable" not in column
        page = client.get(f"/leaderboards/{DATASET}").text
        assert "embedding-average: scored with gensim test vectors, tiny, for the demo" in page


def test_bad_per_dataset_setting_names_the_entry():
    assert parse_per_dataset("ncm=/a.kv; dbdc=none;") == {"ncm": "/a.kv", "dbdc": "none"}
    with pytest.raises(ValueError, match=r"entry 2 \('dbdc'\)"):
        parse_per_dataset("ncm=/a.kv;dbdc")
