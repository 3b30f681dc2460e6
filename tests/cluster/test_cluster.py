"""The many-machine mode end to end, on real processes (scripts/local_cluster.py): a submission uploaded through web
process 1 is stored in S3, evaluated by a separate worker process, visible through web process 2 and in a published
snapshot; then the faults: a worker killed with SIGKILL mid-job, Redis restarted mid-run, S3 writes failing. Every
submission is counted: submitted, completed, duplicated (scored by more than one run that was not a retry after a
lost worker), lost (never completed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from local_cluster import BIN, BUCKET
from sqlmodel import Session, func, select

from hub.models import Submission
from tests.cluster.conftest import STALLED_AFTER_SECONDS, SWEEP_SECONDS, Hub, wait_until

DATASET = "hub-open-v1"
TALLY = {"submitted": 0, "completed": 0, "duplicated": 0, "lost": 0}


@pytest.fixture(scope="module")
def webs(cluster, tokens) -> list[Hub]:
    return [Hub(url, tokens) for url in cluster.web_urls]


def small_responses(tag: str) -> list[str]:
    from evaluation.dataset import load_dataset

    return [f"{p.references[0]} {tag}" for p in load_dataset(DATASET).prompts]


def object_keys(cluster, prefix: str) -> set[str]:
    client = cluster.s3_client(cluster.s3_url)  # moto itself, not through the gate
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {item["Key"] for page in pages for item in page.get("Contents", [])}


def file_key(sha256: str) -> str:
    return f"files/sha256/{sha256[:2]}/{sha256}"


def evaluated(hub: Hub, submission_id: int, role: str | None = "admin"):
    def check():
        submission = hub.submission(submission_id, role)
        return submission if submission["status"] in ("evaluated", "failed") else None

    return check


def count(submission: dict) -> None:
    """Add one finished submission to the tally: completed once, or scored again without a lost worker to explain it."""
    TALLY["submitted"] += 1
    run = submission["evaluation"]
    if submission["status"] != "evaluated":
        TALLY["lost"] += 1
        return
    TALLY["completed"] += 1
    if run["attempts"] - run["worker_losses"] > 1:
        TALLY["duplicated"] += 1


def worker_pids(cluster) -> dict[int, str]:
    return {part.pid: name for name, part in cluster.parts.items() if name.startswith("worker") and part.alive()}


def worker_pid(worker_id: str) -> int:
    return int(worker_id.rsplit(":", 1)[1])


def test_a_submission_is_stored_in_s3_scored_by_a_worker_and_published(cluster, webs, tmp_path):
    lines = small_responses("e2e")
    reply = webs[0].upload("cluster-e2e", DATASET, lines)
    assert reply.status_code == 201, reply.text
    [created] = reply.json()
    assert file_key(created["responses_sha256"]) in object_keys(cluster, "files/")

    assert webs[0].approve(created["id"]).status_code == 200
    # Through the other web process, as anyone (public once approved):
    done = wait_until("evaluated, seen by web-2", evaluated(webs[1], created["id"], role=None), timeout=120)
    assert done["status"] == "evaluated", done
    private = webs[1].submission(created["id"], "admin")
    count(private)
    # Scored by one of the worker processes (the web processes run no queue consumer).
    assert worker_pid(private["evaluation"]["worker_id"]) in worker_pids(cluster)
    assert private["evaluation"]["attempts"] == 1

    # The same numbers as the offline toolkit on the same file.
    responses = tmp_path / "responses.txt"
    responses.write_text("\n".join(lines) + "\n")
    offline = subprocess.run(
        [str(BIN / "chateval"), "evaluate", "--dataset", DATASET, "--responses", str(responses), "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=cluster.process_env(),
    )
    expected = {
        m["signature"]: m["corpus"] for m in json.loads(offline.stdout)["metrics"] if m.get("corpus") is not None
    }
    published = {s["signature"]: s["corpus"] for s in done["scores"]}
    assert published == pytest.approx(expected, rel=1e-12)

    # Published in a snapshot in the bucket (chateval export, run as its own process with the cluster's settings).
    subprocess.run(
        [str(BIN / "chateval"), "export", "--s3", f"s3://{BUCKET}/snapshots"],
        env=cluster.process_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    keys = object_keys(cluster, "snapshots/")
    assert any(key.endswith("manifest.json") for key in keys), keys
    [scores_key] = [key for key in keys if key.endswith("scores.jsonl")]
    body = cluster.s3_client(cluster.s3_url).get_object(Bucket=BUCKET, Key=scores_key)["Body"].read().decode()
    rows = [json.loads(line) for line in body.splitlines()[1:]]  # the first line describes the file
    snapshot = {r["signature"]: r["corpus"] for r in rows if r["submission_id"] == created["id"]}
    assert snapshot == pytest.approx(published, rel=1e-12)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX")
def test_a_worker_killed_mid_job_is_seen_and_its_job_rerun_by_the_other_worker(cluster, webs, big_dataset):
    _, name, lines = big_dataset
    reply = webs[0].upload("cluster-big", name, lines)
    assert reply.status_code == 201, reply.text
    [created] = reply.json()
    assert webs[0].approve(created["id"]).status_code == 200

    def running():
        submission = webs[1].submission(created["id"], "admin")
        return submission if submission["status"] == "evaluating" and submission["evaluation"]["worker_id"] else None

    first = wait_until("the evaluation started", running, timeout=120, every=0.05)
    pid = worker_pid(first["evaluation"]["worker_id"])
    victim = worker_pids(cluster)[pid]
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    cluster.parts[victim].process.wait(timeout=10)

    # The loss is seen (a stale heartbeat) and the job given to the surviving worker, well before a 5-minute sweep.
    def retried():
        return webs[1].submission(created["id"], "admin")["evaluation"]["attempts"] > 1

    wait_until("the job re-run after the kill", retried, timeout=180)
    restarted = time.monotonic() - killed_at
    done = wait_until("the re-run finished", evaluated(webs[1], created["id"]), timeout=180)
    print(
        f"\nkilled worker's job: re-run started {restarted:.1f} s and finished {time.monotonic() - killed_at:.1f} s "
        f"after the kill (heartbeat limit {STALLED_AFTER_SECONDS} s, sweep every {SWEEP_SECONDS} s)"
    )
    assert done["status"] == "evaluated", done["error"]
    run = done["evaluation"]
    assert run["worker_losses"] == 1 and run["attempts"] == 2, run
    assert worker_pid(run["worker_id"]) != pid and worker_pid(run["worker_id"]) in worker_pids(cluster)
    signatures = [s["signature"] for s in done["scores"]]
    assert len(signatures) == len(set(signatures)) > 0  # every metric exactly once
    count(done)
    cluster.start_workers([3])  # back to two workers for the next faults


def test_redis_restarted_mid_run_loses_and_duplicates_nothing(cluster, webs):
    ids = []
    for i in range(6):
        reply = webs[i % 2].upload(f"cluster-redis-{i}", DATASET, small_responses(f"redis-{i}"))
        assert reply.status_code == 201, reply.text
        ids.append(reply.json()[0]["id"])
    for submission_id in ids[:3]:
        assert webs[0].approve(submission_id).status_code == 200
    redis = cluster.parts["redis"]
    redis.stop()  # jobs still queued stay in its append-only file; jobs being scored go on
    for submission_id in ids[3:]:
        reply = webs[1].approve(submission_id)
        assert reply.status_code == 503 and "queue unavailable" in reply.json()["error"], reply.text
    redis.start()
    cluster.wait_redis()

    finished = [wait_until(f"submission {i} evaluated", evaluated(webs[0], i), timeout=180) for i in ids]
    for submission in finished:
        count(submission)
        assert submission["status"] == "evaluated", submission["error"]
        assert submission["evaluation"]["attempts"] == 1, submission["evaluation"]


def test_an_upload_while_s3_fails_answers_503_and_stores_nothing_then_works(cluster, webs):
    from hub.db import get_engine

    def rows() -> int:
        with Session(get_engine()) as session:
            return session.exec(select(func.count()).select_from(Submission)).one()

    lines = small_responses("s3-outage")
    before_rows, before_objects = rows(), object_keys(cluster, "files/")
    cluster.gate.cut()
    try:
        reply = webs[0].upload("cluster-s3", DATASET, lines)
    finally:
        cluster.gate.restore()
    assert reply.status_code == 503, reply.text
    assert "nothing was saved" in reply.json()["error"]
    assert int(reply.headers["Retry-After"]) > 0
    assert (rows(), object_keys(cluster, "files/")) == (before_rows, before_objects)

    reply = webs[0].upload("cluster-s3", DATASET, lines)
    assert reply.status_code == 201, reply.text
    [created] = reply.json()
    assert file_key(created["responses_sha256"]) in object_keys(cluster, "files/")
    assert webs[1].approve(created["id"]).status_code == 200
    count(wait_until("evaluated after the outage", evaluated(webs[1], created["id"]), timeout=120))


def test_the_tally(cluster):
    """Runs last: every submission of the tests above (9 when all ran) completed once."""
    print(f"\ncluster tally: {TALLY}; stalled after {STALLED_AFTER_SECONDS} s")
    if TALLY["submitted"] == 0:
        pytest.skip("run with the tests above")
    assert TALLY["completed"] == TALLY["submitted"] and TALLY["duplicated"] == TALLY["lost"] == 0
