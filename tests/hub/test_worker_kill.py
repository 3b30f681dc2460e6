"""A worker killed with SIGKILL in the middle of an evaluation leaves the submission retryable, with no partial
scores; the retry (the periodic re-queue of stalled evaluations) scores it exactly once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from evaluation.dataset import sha256_file
from hub.models import Score, Submission, SubmissionStatus, System
from hub.models.common import utcnow
from hub.storage import get_storage

PROMPTS = 200_000  # scoring takes seconds (60,000 took under 1 s once the toolkit sped up), so the kill lands mid-way


def write_dataset(folder: Path) -> tuple[str, list[str]]:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(5_000)]

    def sentence() -> str:
        return " ".join(rng.choices(words, k=rng.randint(3, 20)))

    folder.mkdir(parents=True)
    with (folder / "prompts.jsonl").open("w") as handle:
        for i in range(PROMPTS):
            record = {
                "id": str(i),
                "context": [{"role": "user", "content": sentence()}],
                "references": [sentence(), sentence()],
            }
            handle.write(json.dumps(record) + "\n")
    manifest = dict(
        name=folder.name,
        version="1",
        description="",
        source="",
        license="",
        citation="",
        prompts_sha256=sha256_file(folder / "prompts.jsonl"),
    )
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder.name, [sentence() for _ in range(PROMPTS)]


def start_worker(env) -> subprocess.Popen:
    chateval = str(Path(sys.executable).with_name("chateval"))
    return subprocess.Popen([chateval, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(engine, submission_id: int, wanted: SubmissionStatus, timeout: float) -> Submission:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Session(engine) as session:
            submission = session.get(Submission, submission_id)
            if submission.status == wanted:
                return submission
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} never reached {wanted} (is {submission.status})")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_killed_worker_leaves_no_partial_scores_and_the_retry_scores_once(hub_env, tmp_path, monkeypatch):
    from evaluation.dataset import load_dataset
    from evaluation.settings import get_settings as toolkit_settings
    from hub import jobs, queue
    from hub.settings import get_settings

    datasets = tmp_path / "datasets"
    name, lines = write_dataset(datasets / "kill-test")
    monkeypatch.setenv("CHATEVAL_DATASET_DIRS", json.dumps([str(datasets)]))
    toolkit_settings.cache_clear()
    dataset = load_dataset(name)
    with Session(hub_env) as session:
        system = System(name="big", is_public=True)
        session.add(system)
        session.commit()
        submission = Submission(
            system_id=system.id,
            dataset_name=name,
            dataset_fingerprint=dataset.fingerprint,
            responses_sha256=get_storage().put(("\n".join(lines) + "\n").encode()),
            status=SubmissionStatus.approved,
        )
        session.add(submission)
        session.commit()
        submission_id = submission.id

    env = {
        **os.environ,
        "HUB_DATA_DIR": str(get_settings().data_dir),
        "CHATEVAL_DATASET_DIRS": json.dumps([str(datasets)]),
    }
    queue.enqueue_evaluation(submission_id)
    worker = start_worker(env)
    try:
        wait_for(hub_env, submission_id, SubmissionStatus.evaluating, timeout=60)
        time.sleep(0.3)  # well inside the scoring of 200,000 responses
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()

    with Session(hub_env) as session:
        assert session.get(Submission, submission_id).status == SubmissionStatus.evaluating
        assert session.exec(select(Score).where(Score.submission_id == submission_id)).all() == []
        # Time passes: the dead worker's heartbeat goes stale.
        session.get(Submission, submission_id).heartbeat_at = utcnow() - timedelta(minutes=10)
        session.commit()

    assert jobs.requeue_stalled() == [submission_id]
    worker = start_worker(env)
    try:
        wait_for(hub_env, submission_id, SubmissionStatus.evaluated, timeout=180)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    with Session(hub_env) as session:
        metrics = [s.metric for s in session.exec(select(Score).where(Score.submission_id == submission_id))]
    assert sorted(metrics) == sorted(set(metrics)) and {"distinct-1", "bleu-2"} <= set(metrics)
