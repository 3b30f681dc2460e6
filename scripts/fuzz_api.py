"""Schemathesis over the whole OpenAPI of a real hub server, as anonymous, researcher and admin, on SQLite
and/or PostgreSQL; reports how many requests were made and every 5xx found.

Each database gets a fresh hub (uvicorn in a subprocess) seeded with the echo and retrieval baselines, a
researcher and an admin with API tokens, and a launched experiment with an invite. Then `st run` (schemathesis's
CLI) runs once per identity with only the `not_a_server_error` check.

Usage: python scripts/fuzz_api.py [--db sqlite|postgres|both] [--max-examples N] [--phases LIST] [--workers N]
Exit status: 0 when no 5xx was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
POSTGRES_ADMIN_URL = os.environ.get("HUB_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed(env: dict[str, str]) -> dict[str, str]:
    """Baselines, users, tokens and a launched experiment with an invite, in a child process (own settings)."""
    code = """
import json
from sqlmodel import Session
from hub import db, storage
from hub.migrate import upgrade
from hub.services.accounts.accounts import create_token, create_user
from hub.services.submissions.demo import seed_baselines
from hub.services.human import experiments, raters
from hub.models import System
from sqlmodel import select

upgrade()
engine = db.get_engine()
seed_baselines(engine, storage.get_storage(), names=["echo", "retrieval"])
tokens = {}
with Session(engine) as session:
    for role in ("researcher", "admin"):
        user = create_user(session, email=f"{role}@example.org", password="correct horse battery",
                           display_name=role, is_admin=role == "admin")
        tokens[role] = create_token(session, user, name="fuzz")[1]
        if role == "admin":
            admin = user
    ids = {s.name: s.id for s in session.exec(select(System))}
    form = experiments.ExperimentForm(dataset="hub-open-v1", system_a_id=ids["echo"], system_b_id=ids["retrieval"],
                                      seed=7)
    experiment = experiments.create_experiment(session, admin, form, storage.get_storage())
    experiment = experiments.launch(session, admin, experiment.id)
    raters.create_invite(session, admin, experiment, label="fuzz", cohort=True)
print(json.dumps(tokens))
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def start_server(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "uvicorn", "--factory", "hub.web.app:create_app", "--port", str(port)]
    server = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit(f"server did not start; see {log}")


def run_schemathesis(port: int, token: str | None, args, report_dir: Path) -> tuple[int, list[str]]:
    """One `st run`; returns (requests made, failure lines)."""
    command = [
        str(BIN / "st"),
        "run",
        f"http://127.0.0.1:{port}/openapi.json",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        str(args.max_examples),
        "--phases",
        args.phases,
        "--workers",
        str(args.workers),
        "--continue-on-failure",
        "--report",
        "ndjson",
        "--report-dir",
        str(report_dir),
        "--suppress-health-check",
        "all",
        "--request-timeout",
        "60",
        "--seed",
        str(args.seed),
    ]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    result = subprocess.run(command, cwd=report_dir.parent, capture_output=True, text=True)  # its cache goes there
    requests = 0
    failures: list[str] = []
    for report in report_dir.glob("*.ndjson"):
        for line in report.read_text().splitlines():
            event = json.loads(line)
            requests += _count_requests(event)
    if "Server error" in result.stdout:  # the not_a_server_error check failed: print schemathesis's account
        failures = [line for line in result.stdout.splitlines() if line.strip()][-80:]
    elif result.returncode != 0:  # e.g. a Hypothesis error inside schemathesis: reported, not counted as a 5xx
        errors = [line for line in result.stdout.splitlines() if "Error" in line]
        print(f"  (schemathesis exited {result.returncode} without a 5xx: {errors[-1][:160] if errors else ''})")
    return requests, failures


def _count_requests(event: dict) -> int:
    """Interactions recorded in a ScenarioFinished event of the ndjson report."""
    finished = event.get("ScenarioFinished")
    if not finished:
        return 0
    recorder = finished.get("recorder") or {}
    return len(recorder.get("interactions") or {})


def database(kind: str, scratch: Path):
    if kind == "sqlite":
        return f"sqlite:///{scratch / 'hub.db'}", lambda: None
    name = f"hub_fuzz_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop():
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}", drop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--phases", default="examples,coverage,fuzzing")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    total_requests = 0
    found = False
    for kind in kinds:
        scratch = Path(tempfile.mkdtemp(prefix=f"hub-fuzz-{kind}-"))
        url, drop = database(kind, scratch)
        env = {**os.environ, "HUB_DATA_DIR": str(scratch), "HUB_DATABASE_URL": url}
        env.pop("HUB_QUEUE_URL", None)
        env.pop("HUB_STORAGE_URL", None)
        tokens = seed(env)
        port = free_port()
        server = start_server(env, port, scratch / "server.log")
        try:
            for identity, token in (
                ("anonymous", None),
                ("researcher", tokens["researcher"]),
                ("admin", tokens["admin"]),
            ):
                started = time.monotonic()
                report_dir = scratch / f"report-{identity}"
                requests, failures = run_schemathesis(port, token, args, report_dir)
                total_requests += requests
                verdict = "no 5xx" if not failures else "5xx FOUND"
                print(f"{kind:8} {identity:10} {requests:7} requests {time.monotonic() - started:6.1f} s  {verdict}")
                if failures:
                    found = True
                    print("\n".join(failures))
            errors = Counter(line for line in (scratch / "server.log").read_text().splitlines() if "Error" in line)
            for line, count in errors.most_common(20):
                print(f"  server log x{count}: {line[:200]}")
        finally:
            server.terminate()
            server.wait(timeout=10)
            drop()
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"total: {total_requests} requests; {'5xx found' if found else 'no 5xx'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
