"""`chateval export`: a versioned public snapshot (JSONL and CSV of every public table, one SQLite file of them all,
index.html, manifest.json) that is byte-identical for unchanged data, holds no private byte, and is published whole
or not at all, to a folder."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import threading

import pytest
from sqlmodel import Session, select

from hub.models import Rater
from hub.services.publishing import public_snapshot, snapshot
from tests.hub.snapshots import helpers


@pytest.fixture
def seeded(hub_env, admin_user, baselines):
    helpers.seed_public(hub_env, admin_user, baselines)
    helpers.seed_private(hub_env, admin_user, baselines)
    return hub_env


@pytest.fixture
def out(tmp_path):
    """The export's folder (the hub's own data folder is tmp_path/hub-data)."""
    return tmp_path / "snapshots"


def _versions(root):
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


def test_two_snapshots_of_unchanged_data_are_byte_identical(seeded, tmp_path, run_cli):
    first = run_cli("export", "--out", tmp_path / "a")
    assert first.exit_code == 0, first.stderr
    second = run_cli("export", "--out", tmp_path / "b")
    assert second.exit_code == 0, second.stderr
    [version] = _versions(tmp_path / "a")
    assert _versions(tmp_path / "b") == [version]
    a, b = helpers.every_byte(tmp_path / "a" / version), helpers.every_byte(tmp_path / "b" / version)
    assert sorted(a) == sorted(b) and len(a) >= 20
    different = [name for name in a if a[name] != b[name]]
    assert different == []
    # Exported again into the same folder: the same version, nothing rewritten, only one version folder.
    again = run_cli("export", "--out", tmp_path / "a")
    assert again.exit_code == 0 and "unchanged, already published" in again.stdout
    assert _versions(tmp_path / "a") == [version]


def test_changed_data_gives_a_new_version_and_moves_the_pointers(seeded, out, run_cli):
    assert run_cli("export", "--out", out).exit_code == 0
    [old] = _versions(out)
    with Session(seeded) as session:  # an admin excludes a rater: the ratings' `excluded` flags change
        from hub.models import User
        from hub.services.human import raters

        admin = session.exec(select(User).where(User.is_admin)).first()
        rater = session.exec(select(Rater).where(Rater.external_id == "public-rater-0")).one()
        raters.set_excluded(session, admin, rater.id, excluded=True, reason="always left")
    assert run_cli("export", "--out", out).exit_code == 0
    versions = _versions(out)
    assert len(versions) == 2 and old in versions
    [new] = [v for v in versions if v != old]
    assert json.loads((out / "latest.json").read_text())["version"] == new
    assert (out / "latest").resolve() == (out / new).resolve()
    _, files = helpers.read_whole(out)
    rows = [json.loads(line) for line in files["ratings.jsonl"].splitlines()[1:]]
    assert any(row["excluded"] and row["exclusion_reason"] == "always left" for row in rows)


def test_the_manifest_lists_every_file_with_its_sha256_and_the_versions(seeded, out, run_cli):
    result = run_cli("export", "--out", out)
    assert result.exit_code == 0, result.stderr
    manifest, files = helpers.read_whole(out)  # checks every sha256
    [version] = _versions(out)
    on_disk = {p.name for p in (out / version).iterdir()}
    assert on_disk == {*manifest["files"], "manifest.json"}
    tables = ["systems", "submissions", "scores", "responses", "ratings", "irt_systems", "irt_pairs", "irt_prompts"]
    for table in tables:
        assert {f"{table}.jsonl", f"{table}.csv"} <= set(files)
    assert {"chateval.sqlite", "index.html"} <= set(files)
    assert manifest["schema_version"] == 1 and manifest["snapshot_format"] == public_snapshot.SNAPSHOT_FORMAT
    assert manifest["code_version"].startswith("chateval-hub ")
    assert manifest["database_revision"]
    # The date is the newest change in the published rows, never the wall clock; the version carries it and the
    # manifest's own sha256.
    stamps = []
    for table in tables:
        header, *rows = (json.loads(line) for line in files[f"{table}.jsonl"].splitlines())
        assert manifest["tables"][table] == len(rows)
        stamps += [row[f] for row in rows for f in header["fields"] if f.endswith("_at") and row[f]]
    newest = max(public_snapshot._normalise(s) for s in stamps)
    assert manifest["data_changed_at"] == newest.isoformat()
    manifest_sha = hashlib.sha256((out / version / "manifest.json").read_bytes()).hexdigest()
    assert version == f"{newest.strftime('%Y%m%dT%H%M%SZ')}-{manifest_sha[:16]}"
    assert manifest["tables"]["ratings"] > 20 and manifest["tables"]["irt_systems"] == 2


def test_the_sqlite_file_holds_every_public_table_as_the_downloads_do(seeded, out, run_cli):
    assert run_cli("export", "--out", out).exit_code == 0
    manifest, files = helpers.read_whole(out)
    path = out / "latest" / "chateval.sqlite"
    database = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for table, count in manifest["tables"].items():
        header, *rows = (json.loads(line) for line in files[f"{table}.jsonl"].splitlines())
        columns = [c[1] for c in database.execute(f'PRAGMA table_info("{table}")')]
        assert columns == header["fields"], table
        stored = database.execute(f'SELECT * FROM "{table}"').fetchall()
        assert len(stored) == count
        for row, values in zip(rows, stored, strict=True):
            for name, value in zip(columns, values, strict=True):
                expected = row[name]
                if isinstance(expected, list | dict):
                    assert json.loads(value) == expected, (table, name)
                elif isinstance(expected, bool):
                    assert value == int(expected), (table, name)
                else:
                    assert value == expected, (table, name)
    described = database.execute("SELECT COUNT(DISTINCT table_name) FROM snapshot_columns").fetchone()[0]
    assert described == len(manifest["tables"])
    info = dict(database.execute("SELECT key, value FROM snapshot_info"))
    assert info["data_changed_at"] == manifest["data_changed_at"]
    assert database.execute("PRAGMA page_size").fetchone()[0] == public_snapshot.PAGE_SIZE
    assert database.execute("PRAGMA freelist_count").fetchone()[0] == 0  # VACUUMed: no stale pages
    database.close()
    if shutil.which("sqlite3"):  # the sqlite3 command reads it as well
        query = "SELECT COUNT(*) FROM responses JOIN systems ON systems.id = responses.system_id"
        shell = subprocess.run(["sqlite3", str(path), query], capture_output=True, text=True, check=True)
        assert int(shell.stdout) == manifest["tables"]["responses"] > 0


def test_no_private_byte_appears_in_any_file(seeded, out, run_cli, people):
    from hub.models import User

    assert run_cli("export", "--out", out).exit_code == 0
    with Session(seeded) as session:
        password_hashes = [u.password_hash.encode() for u in session.exec(select(User))]
        external_ids = [r.external_id for r in session.exec(select(Rater))]
    secrets = [
        helpers.PRIVATE_NAME,
        helpers.PRIVATE_DESCRIPTION,
        helpers.PRIVATE_RESPONSE,
        helpers.UNAPPROVED_RESPONSE,
        helpers.RATER_EMAIL,
        helpers.PRIVATE_WORKER,
        helpers.INVITE_LABEL,
        "@example.org",  # every account's and rater's email
        *people.values(),  # API tokens
        *external_ids,
    ]
    found = helpers.every_byte(out)
    assert len(found) >= 20
    for name, data in found.items():
        for secret in secrets:
            assert secret.encode() not in data, (name, secret)
        for password_hash in password_hashes:
            assert password_hash not in data, name
    _, files = helpers.read_whole(out)
    rows = [json.loads(line) for line in files["ratings.jsonl"].splitlines()[1:]]
    with Session(seeded) as session:
        hashes = {r.public_hash for r in session.exec(select(Rater))}
    assert rows and {row["rater"] for row in rows} <= hashes  # the ratings download's salted hashes


def test_index_html_lists_every_file_and_table_with_no_outside_asset(seeded, out, run_cli):
    assert run_cli("export", "--out", out).exit_code == 0
    manifest, files = helpers.read_whole(out)
    html = files["index.html"].decode()
    for name, sha in manifest["files"].items():
        if name != "index.html":
            assert f'href="{name}"' in html and sha in html, name
    for table in manifest["tables"]:
        assert f'id="{table}"' in html
    assert "<script" not in html and "<link" not in html and "src=" not in html
    assert "http://" not in html and "https://" not in html
    assert manifest["data_changed_at"] in html


def test_a_failure_mid_write_publishes_nothing_and_keeps_the_last_snapshot(seeded, out):
    first = snapshot.publish_snapshot(str(out))
    pointer = (out / "latest.json").read_bytes()
    rate_more = helpers.new_experiment(seeded, *_admin_and_baselines(seeded))
    helpers.rate_everything(seeded, rate_more.id, "late-rater", raters_n=1)

    def fail_halfway(step: str, done: int, total: int) -> None:
        if step == "table ratings":
            raise RuntimeError("disk full (simulated)")

    with pytest.raises(RuntimeError, match="simulated"):
        snapshot.publish_snapshot(str(out), progress=fail_halfway)
    assert _versions(out) == [first.version]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no .tmp- folder left
    assert (out / "latest.json").read_bytes() == pointer
    helpers.read_whole(out)  # the previous snapshot is whole
    second = snapshot.publish_snapshot(str(out))
    assert second.version != first.version and not second.reused


def _admin_and_baselines(engine):
    from hub.models import System, User

    with Session(engine) as session:
        admin = session.exec(select(User).where(User.is_admin)).first()
        ids = {s.name: s.id for s in session.exec(select(System)) if s.name in ("echo", "retrieval")}
        session.expunge(admin)
    return admin, ids


def test_a_concurrent_reader_always_finds_a_whole_snapshot(seeded, out):
    snapshot.publish_snapshot(str(out))
    stop, reads, failures = threading.Event(), [], []

    def reader() -> None:
        while not stop.is_set():
            try:
                manifest, _ = helpers.read_whole(out)
                reads.append(manifest["data_changed_at"])
            except Exception as exc:  # a half snapshot: a missing file, a wrong sha256, a torn pointer
                failures.append(repr(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        admin, ids = _admin_and_baselines(seeded)
        for round_ in range(3):  # new data each round, so each export publishes a new version
            experiment = helpers.new_experiment(seeded, admin, ids)
            helpers.rate_everything(seeded, experiment.id, f"round-{round_}", raters_n=1)
            assert not snapshot.publish_snapshot(str(out)).reused
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert len(reads) >= 3 and len(set(reads)) >= 2
    assert len(_versions(out)) == 4


def test_export_needs_one_target_and_names_a_bad_one(hub_env, run_cli):
    assert run_cli("export").exit_code == 2
    result = run_cli("export", "--out", "ftp://example.org/x")
    assert result.exit_code == 3 and "out" in result.stderr and "s3://bucket/prefix" in result.stderr


@pytest.fixture
def postgres_hub(postgres_url, tmp_path, monkeypatch):
    """A migrated hub on a fresh PostgreSQL database, with the baselines scored and an admin."""
    from hub import db
    from hub.migrate import upgrade
    from hub.services.accounts.accounts import create_user
    from hub.services.submissions.demo import seed_baselines
    from hub.storage import get_storage
    from tests.hub.conftest import _clear_caches

    monkeypatch.setenv("HUB_DATA_DIR", str(tmp_path / "hub-data"))
    monkeypatch.setenv("HUB_DATABASE_URL", postgres_url)
    for name in ("HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        monkeypatch.delenv(name, raising=False)
    _clear_caches()
    upgrade()
    engine = db.get_engine()
    with Session(engine) as session:
        for role in ("owner", "admin"):
            create_user(
                session,
                email=f"{role}@example.org",
                password="correct horse battery",
                display_name=role,
                is_admin=role == "admin",
            )
    seed_baselines(engine, get_storage(), names=["echo", "retrieval"])
    yield engine
    engine.dispose()
    _clear_caches()


def test_on_postgresql_two_snapshots_are_byte_identical_and_hold_no_private_byte(postgres_hub, out):
    admin, ids = _admin_and_baselines(postgres_hub)
    helpers.seed_public(postgres_hub, admin, ids)
    helpers.seed_private(postgres_hub, admin, ids)
    first = snapshot.publish_snapshot(str(out / "a"))
    second = snapshot.publish_snapshot(str(out / "b"))
    assert first.version == second.version and not second.reused
    a, b = helpers.every_byte(out / "a" / first.version), helpers.every_byte(out / "b" / first.version)
    assert sorted(a) == sorted(b) and [name for name in a if a[name] != b[name]] == []
    manifest, _ = helpers.read_whole(out / "a")
    assert manifest["tables"]["ratings"] > 20 and manifest["tables"]["irt_systems"] == 2
    for name, data in a.items():
        for secret in (helpers.PRIVATE_NAME, helpers.PRIVATE_RESPONSE, helpers.UNAPPROVED_RESPONSE, "@example.org"):
            assert secret.encode() not in data, (name, secret)
