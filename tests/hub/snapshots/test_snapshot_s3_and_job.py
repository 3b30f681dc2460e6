"""Snapshots published to S3 (moto's standalone server, a real HTTP server) with the manifest as the commit point,
the scheduled `publish_snapshot` job, and the judging tables when they exist."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

import pytest
from pydantic import ValidationError
from sqlmodel import Session, select

from hub import queue, settings
from hub.models import Submission, System
from hub.services.publishing import snapshot
from tests.hub.conftest import DATASET, _clear_caches
from tests.hub.snapshots import helpers

BUCKET = "public-data"


@pytest.fixture(scope="module")
def s3_endpoint():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_endpoint, hub_env, monkeypatch):
    import boto3

    for name, value in (
        ("AWS_ACCESS_KEY_ID", "t"),
        ("AWS_SECRET_ACCESS_KEY", "t"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HUB_S3_ENDPOINT_URL", s3_endpoint)
    settings.get_settings.cache_clear()
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    bucket = f"{BUCKET}-{hashlib.sha256(str(hub_env.url).encode()).hexdigest()[:8]}"
    client.create_bucket(Bucket=bucket)
    return client, bucket


def _read_whole_s3(client, bucket: str, prefix: str) -> tuple[dict, dict[str, bytes]]:
    """Follow prefix/latest.json to the manifest and read every file it lists, checking each sha256."""

    def get(key: str) -> bytes:
        return client.get_object(Bucket=bucket, Key=f"{prefix}/{key}")["Body"].read()

    pointer = json.loads(get("latest.json"))
    manifest_bytes = get(pointer["manifest"])
    assert hashlib.sha256(manifest_bytes).hexdigest() == pointer["manifest_sha256"]
    manifest = json.loads(manifest_bytes)
    files = {}
    for name, sha in manifest["files"].items():
        files[name] = get(f"{pointer['version']}/{name}")
        assert hashlib.sha256(files[name]).hexdigest() == sha, name
    return manifest, files


def _keys(client, bucket: str) -> dict[str, str]:
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: o["ETag"] for o in listed}


def test_a_snapshot_in_s3_is_whole_the_same_for_the_same_data_and_matches_the_folder_one(
    s3, hub_env, admin_user, baselines, run_cli, tmp_path
):
    client, bucket = s3
    helpers.seed_public(hub_env, admin_user, baselines)
    result = run_cli("export", "--out", f"s3://{bucket}/snapshots")
    assert result.exit_code == 0, result.stderr
    _, files = _read_whole_s3(client, bucket, "snapshots")
    version = json.loads(client.get_object(Bucket=bucket, Key="snapshots/latest.json")["Body"].read())["version"]
    assert set(_keys(client, bucket)) == {f"snapshots/{version}/{n}" for n in [*files, "manifest.json"]} | {
        "snapshots/latest.json"
    }
    head = client.head_object(Bucket=bucket, Key=f"snapshots/{version}/chateval.sqlite")
    assert head["ContentType"] == "application/vnd.sqlite3"
    before = _keys(client, bucket)
    again = run_cli("export", "--out", f"s3://{bucket}/snapshots")
    assert again.exit_code == 0 and "unchanged, already published" in again.stdout
    assert {k: v for k, v in _keys(client, bucket).items() if not k.endswith("latest.json")} == {
        k: v for k, v in before.items() if not k.endswith("latest.json")
    }
    # The same bytes as a snapshot of the same data written to a folder.
    local = snapshot.publish_snapshot(str(tmp_path / "folder"))
    assert local.version == version
    assert helpers.every_byte(tmp_path / "folder" / version) == {**files, "manifest.json": _manifest_bytes(s3, version)}


def _manifest_bytes(s3, version: str) -> bytes:
    client, bucket = s3
    return client.get_object(Bucket=bucket, Key=f"snapshots/{version}/manifest.json")["Body"].read()


def test_an_upload_failing_midway_publishes_no_manifest_and_keeps_the_last_snapshot(s3, hub_env, admin_user, baselines):
    client, bucket = s3
    target = f"s3://{bucket}/snapshots"
    first = snapshot.publish_snapshot(target)
    pointer = client.get_object(Bucket=bucket, Key="snapshots/latest.json")["Body"].read()
    helpers.seed_public(hub_env, admin_user, baselines)  # new data: a new version

    def fail_midway(step: str, done: int, total: int) -> None:
        if step == "upload responses.csv":
            raise ConnectionError("S3 went away (simulated)")

    with pytest.raises(ConnectionError):
        snapshot.publish_snapshot(target, progress=fail_midway)
    keys = _keys(client, bucket)
    manifests = sorted(k for k in keys if k.endswith("/manifest.json"))
    assert manifests == [f"snapshots/{first.version}/manifest.json"]  # the new version has files but no manifest
    assert any(k.startswith("snapshots/") and first.version not in k and "latest" not in k for k in keys)
    assert client.get_object(Bucket=bucket, Key="snapshots/latest.json")["Body"].read() == pointer
    manifest, _ = _read_whole_s3(client, bucket, "snapshots")  # readers still get the whole previous one
    assert manifest["tables"]["ratings"] == 0
    second = snapshot.publish_snapshot(target)  # the next run finishes the job
    assert second.version != first.version
    manifest, _ = _read_whole_s3(client, bucket, "snapshots")
    assert manifest["tables"]["ratings"] > 0


def test_the_publish_snapshot_job_is_off_by_default_and_publishes_when_configured(
    hub_env, baselines, monkeypatch, tmp_path
):
    from hub import jobs

    assert jobs.publish_snapshot() is None
    assert not (tmp_path / "published").exists()
    monkeypatch.setenv("HUB_SNAPSHOT_URL", str(tmp_path / "published"))
    settings.get_settings.cache_clear()
    version = jobs.publish_snapshot()
    assert version and json.loads((tmp_path / "published" / "latest.json").read_text())["version"] == version
    assert jobs.publish_snapshot() == version  # unchanged data: the same version


@pytest.mark.parametrize(
    ("hours", "runs", "skips"),
    [(None, [(3, 7)], [(4, 7), (3, 8), (15, 7)]), ("6", [(0, 7), (6, 7), (18, 7)], [(7, 7), (6, 0)])],
)
def test_the_job_is_scheduled_by_name_daily_or_every_n_hours(hub_env, monkeypatch, hours, runs, skips):
    if hours:
        monkeypatch.setenv("HUB_SNAPSHOT_EVERY_HOURS", hours)
    _clear_caches()
    wrapper = queue.tasks()[queue.PUBLISH_SNAPSHOT]
    task = wrapper.task_class()  # a periodic task: huey asks it every minute
    assert wrapper.name == "publish_snapshot" and queue.PUBLISH_SNAPSHOT in queue.JOB_NAMES
    for hour, minute in runs:
        assert task.validate_datetime(datetime(2026, 11, 24, hour, minute)), (hour, minute)
    for hour, minute in skips:
        assert not task.validate_datetime(datetime(2026, 11, 24, hour, minute)), (hour, minute)


@pytest.mark.parametrize("value", ["0", "25", "daily"])
def test_a_bad_interval_is_refused_naming_the_setting(monkeypatch, value):
    monkeypatch.setenv("HUB_SNAPSHOT_EVERY_HOURS", value)
    with pytest.raises(ValidationError, match="snapshot_every_hours"):
        settings.HubSettings()


def test_judge_results_are_published_without_endpoints_or_keys(hub_env, admin_user, baselines, tmp_path, monkeypatch):
    models = pytest.importorskip("hub.models.judging", reason="the judging tables are not in this tree")
    pytest.importorskip("hub.services.judging.views", reason="the judging views are not in this tree")
    secret_key, secret_host = "sk-snapshot-judge-key-QX7", "judge-host-secret-qx7.internal"
    monkeypatch.setenv("SNAPSHOT_JUDGE_KEY_QX7", secret_key)
    helpers.seed_private(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        hidden = session.exec(select(System).where(System.name == helpers.PRIVATE_NAME)).one()
        judge = models.Judge(
            name="length judge", base_url=f"http://{secret_host}/v1", model="m-1", key_ref="SNAPSHOT_JUDGE_KEY_QX7"
        )
        session.add(judge)
        session.commit()
        submissions = {s.system_id: s for s in session.exec(select(Submission))}
        for a, b in ((baselines["echo"], baselines["retrieval"]), (baselines["echo"], hidden.id)):
            session.add(
                models.JudgeJudgement(
                    judge_id=judge.id,
                    rater=f"m-1|pairwise-v1|{secret_host}" if b == hidden.id else "m-1|pairwise-v1",
                    dataset_name=DATASET,
                    dataset_fingerprint=submissions[a].dataset_fingerprint,
                    prompt_id="p1",
                    system_a_id=a,
                    system_b_id=b,
                    item_kind="pair",
                    outcome="A",
                    template="pairwise-v1",
                )
            )
        attachment = models.DatasetJudging(dataset_name=DATASET, kind="rubric", label="r@1", judge_id=judge.id)
        session.add(attachment)
        session.commit()
        for system_id, note in ((baselines["echo"], "fine"), (hidden.id, helpers.PRIVATE_DESCRIPTION)):
            session.add(
                models.RubricGrade(
                    submission_id=submissions[system_id].id,
                    attachment_id=attachment.id,
                    judge_id=judge.id,
                    rubric="r@1",
                    signature="rubric:r@1",
                    prompt_id="p1",
                    score=0.8,
                    status="PASSED",
                    criteria=[{"id": "c", "grade": "4", "explanation": note}],
                )
            )
        session.commit()
    published = snapshot.publish_snapshot(str(tmp_path / "out"))
    manifest, files = helpers.read_whole(tmp_path / "out")
    assert manifest["tables"]["judges"] == 1
    assert manifest["tables"]["judge_judgements"] == 1  # the pair with the private system is left out
    assert manifest["tables"]["rubric_grades"] == 1
    [row] = [json.loads(line) for line in files["judge_judgements.jsonl"].splitlines()[1:]]
    assert (row["system_a_id"], row["system_b_id"], row["outcome"]) == (baselines["echo"], baselines["retrieval"], "A")
    for name, data in helpers.every_byte(tmp_path / "out" / published.version).items():
        for secret in (secret_key, secret_host, "SNAPSHOT_JUDGE_KEY_QX7", helpers.PRIVATE_DESCRIPTION):
            assert secret.encode() not in data, (name, secret)
