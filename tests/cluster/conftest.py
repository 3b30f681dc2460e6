"""One running many-machine cluster per test module (scripts/local_cluster.py: PostgreSQL, Redis, moto's S3 server, two
workers, two web processes, all real processes), with the S3 server behind a gate the tests can cut."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from local_cluster import BIN, POSTGRES_ADMIN_URL, Cluster

from tests.cluster.gate import Gate
from tests.hub.conftest import hub_env, people  # noqa: F401 (the single-machine fixtures, for the lease tests)
from tests.hub.test_worker_kill import write_dataset

SWEEP_SECONDS = 2  # the sweep runs this often in the test cluster (15 s by default)
STALLED_AFTER_SECONDS = 8  # a heartbeat older than this means the worker is gone (60 s by default)


def _requirements() -> str | None:
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    if not (BIN / "moto_server").exists():
        return "moto's server is not installed (make install-test)"
    admin = sa.create_engine(POSTGRES_ADMIN_URL)
    try:
        with admin.connect():
            pass
    except sa.exc.OperationalError as exc:
        return f"PostgreSQL not reachable at {POSTGRES_ADMIN_URL}: {exc.orig}"
    finally:
        admin.dispose()
    return None


def _clear_hub_caches() -> None:
    from hub import db, queue, settings, storage

    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


@pytest.fixture(scope="module")
def big_dataset(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """A 200,000-prompt dataset (the one of the single-machine worker-kill test): scoring it takes seconds."""
    folder = tmp_path_factory.mktemp("cluster-datasets")
    name, lines = write_dataset(folder / "kill-test")
    return folder, name, lines


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, big_dataset) -> Iterator[Cluster]:
    missing = _requirements()
    if missing:
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("cluster")
    home = tmp_path_factory.mktemp("cluster-chateval-home")
    running = Cluster(
        root,
        sweep_seconds=SWEEP_SECONDS,
        stalled_after_seconds=STALLED_AFTER_SECONDS,
        extra_env={
            "CHATEVAL_HOME": str(home),
            "CHATEVAL_DATASET_DIRS": json.dumps([str(big_dataset[0])]),
            "HUB_SUBMISSIONS_PER_DAY": "1000",  # the module's owner uploads more than a day's default quota
        },
    )
    gate = None
    saved = {k: v for k, v in os.environ.items() if k.startswith("HUB_")}
    try:
        running.start_services()
        host, port = running.s3_url.removeprefix("http://").split(":")
        gate = Gate(host, int(port))
        running.hub_s3_url = gate.url
        running.gate = gate  # type: ignore[attr-defined]
        running.start_hub()
        # This process reads and writes the cluster's database directly (users, tokens, counts) with its settings.
        os.environ.update({k: v for k, v in running.hub_env().items() if k.startswith("HUB_")})
        _clear_hub_caches()
        yield running
    finally:
        running.stop()
        if gate is not None:
            gate.close()
        for key in [k for k in os.environ if k.startswith("HUB_")]:
            del os.environ[key]
        os.environ.update(saved)
        _clear_hub_caches()


@pytest.fixture(scope="module")
def tokens(cluster) -> dict[str, str]:
    """API tokens of a researcher and an admin, made in the cluster's database."""
    from sqlmodel import Session

    from hub.db import get_engine
    from hub.services.accounts.accounts import create_token, create_user

    made = {}
    with Session(get_engine()) as session:
        for role in ("owner", "admin"):
            user = create_user(
                session,
                email=f"{role}@cluster.example.org",
                password="correct horse battery",
                display_name=role,
                is_admin=role == "admin",
            )
            made[role] = create_token(session, user, name="cluster")[1]
    return made


def wait_until(what: str, check: Callable[[], object], timeout: float, every: float = 0.1) -> object:
    """`check()`'s first truthy value within `timeout` seconds (a bound against hanging, not a speed target)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


class Hub:
    """The API of one web process, as a researcher or admin reaches it."""

    def __init__(self, url: str, tokens: dict[str, str]):
        self.url, self.tokens = url, tokens
        self.client = httpx.Client(base_url=url, timeout=120)

    def headers(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}

    def upload(self, name: str, dataset: str, lines: list[str]) -> httpx.Response:
        content = ("\n".join(lines) + "\n").encode()
        files = {f"responses[{dataset}]": ("responses.txt", content, "text/plain")}
        data = {"name": name, "is_public": "true"}
        return self.client.post("/api/submissions", headers=self.headers("owner"), data=data, files=files)

    def approve(self, submission_id: int) -> httpx.Response:
        return self.client.post(f"/api/admin/submissions/{submission_id}/approve", headers=self.headers("admin"))

    def submission(self, submission_id: int, role: str | None = None) -> dict:
        reply = self.client.get(f"/api/submissions/{submission_id}", headers=self.headers(role) if role else {})
        reply.raise_for_status()
        return reply.json()
