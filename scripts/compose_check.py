"""The end-to-end path and the faults of tests/cluster/, driven against docker-compose.yml's containers instead of
local processes: a submission uploaded to web-1 is stored in S3, scored by a worker container, seen through web-2
and published in a snapshot; then the faults: a worker container killed with SIGKILL mid-evaluation, Redis stopped
and started, jobs queued while no worker runs kept across `restart redis`, a worker's process killed from outside
Docker (its restart policy brings it back), the S3 service cut off the network during an upload. Prints one line
per check and a tally; exit status 1 if any check failed. Needs a Docker engine and `docker compose` (or the
standalone docker-compose).

    .venv/bin/python scripts/compose_check.py --up --down    # build, start, check, then remove (volumes included)
    .venv/bin/python scripts/compose_check.py                 # against an already running project (-p chateval)

With the compose file's settings a killed worker's job is retried after its heartbeat is 60 s old (sweep 15 s), so
a full run takes several minutes."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from local_cluster import BUCKET, REPO  # noqa: E402

from tests.cluster.conftest import Hub, wait_until  # noqa: E402
from tests.cluster.test_cluster import DATASET, evaluated, file_key, small_responses  # noqa: E402
from tests.cluster.test_compose_file import _compose_cli  # noqa: E402
from tests.hub import test_worker_kill as worker_kill  # noqa: E402

WEB_URLS = ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
WEBS = ["web-1", "web-2"]
WORKERS = ["worker-1", "worker-2"]
PASSWORD = "correct horse battery"
RUN = secrets.token_hex(3)
TOKENS = """
import json, sys
from sqlmodel import Session, select
from hub.db import get_engine
from hub.models import User
from hub.services.accounts.accounts import create_token, create_user
admin_email, tag, roles, password = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
made = {}
with Session(get_engine()) as session:
    admin = session.exec(select(User).where(User.email == admin_email)).one()
    made["admin"] = create_token(session, admin, name="compose-check")[1]
    for role in roles:
        user = create_user(session, email=f"{role}-{tag}@compose.example.org", password=password, display_name=role)
        made[role] = create_token(session, user, name="compose-check")[1]
print(json.dumps(made))
"""
COUNT_ROWS = """
from sqlmodel import Session, func, select
from hub.db import get_engine
from hub.models import Submission
with Session(get_engine()) as session:
    print(session.exec(select(func.count()).select_from(Submission)).one())
"""
S3_READ = """
import json, sys, boto3
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:5000", aws_access_key_id="moto", aws_secret_access_key="moto",
                  region_name="us-east-1")
if sys.argv[1] == "list":
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[3], Prefix=sys.argv[2])
    print(json.dumps(sorted(item["Key"] for page in pages for item in page.get("Contents", []))))
else:
    sys.stdout.write(s3.get_object(Bucket=sys.argv[3], Key=sys.argv[2])["Body"].read().decode())
"""


class Compose:
    """One compose project: the CLI found, with HUB_SECRET_KEY set (compose refuses every command without it; only
    `up` puts it into containers, so a placeholder is enough to drive a project already running)."""

    def __init__(self, project: str, file: Path):
        cli = _compose_cli()
        if cli is None:
            sys.exit("neither `docker compose` nor `docker-compose` is installed")
        self.base = [*cli, "-p", project, "-f", str(file)]
        self.env = {**os.environ}
        self.env.setdefault("HUB_SECRET_KEY", "unused-outside-up")

    def run(self, *args: str, input: str | None = None, timeout: float = 600) -> str:
        done = subprocess.run(
            [*self.base, *args], env=self.env, input=input, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode:
            raise RuntimeError(f"{' '.join(args[:3])}: exit {done.returncode}: {done.stderr[-1500:]}")
        return done.stdout

    def exec(self, service: str, *command: str, input: str | None = None) -> str:
        return self.run("exec", "-T", service, *command, input=input)

    def python(self, service: str, code: str, *argv: str) -> str:
        return self.exec(service, "python", "-c", code, *argv)

    def container(self, service: str) -> str:
        return self.run("ps", "-q", service).strip()

    def hostname(self, service: str) -> str:
        return docker("inspect", "-f", "{{.Config.Hostname}}", self.container(service)).strip()


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True, timeout=300).stdout


class Checks:
    def __init__(self):
        self.rows: list[tuple[str, bool, str]] = []
        self.tally = {"submitted": 0, "completed": 0, "duplicated": 0, "lost": 0}

    def check(self, name: str, ok: bool, detail: object = "") -> bool:
        self.rows.append((name, bool(ok), str(detail)[:300]))
        print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail if not ok else ''}".rstrip(), flush=True)
        return bool(ok)

    def count(self, submission: dict) -> None:
        """As test_cluster.count: completed once, or scored again without a lost worker to explain it."""
        self.tally["submitted"] += 1
        run = submission["evaluation"]
        if submission["status"] != "evaluated":
            self.tally["lost"] += 1
        else:
            self.tally["completed"] += 1
            self.tally["duplicated"] += run["attempts"] - run["worker_losses"] > 1

    def scenario(self, name: str, body, *args) -> None:
        started = time.monotonic()
        print(f"--- {name}", flush=True)
        try:
            body(self, *args)
        except Exception as exc:  # one broken scenario must not hide the others' results
            self.check(f"{name}: ran to the end", False, f"{type(exc).__name__}: {exc}")
        print(f"    ({time.monotonic() - started:.0f} s)", flush=True)


def s3_keys(compose: Compose, prefix: str) -> set[str]:
    return set(json.loads(compose.python("s3", S3_READ, "list", prefix, BUCKET)))


def rows(compose: Compose) -> int:
    return int(compose.python("worker-1", COUNT_ROWS).strip())


def make_hubs(compose: Compose, checks: Checks, roles: list[str]) -> dict[str, Hub]:
    """An admin made with `chateval admin create-user --admin` in a worker container (the README's way), owners and
    API tokens made there with the hub's own functions (as the cluster tests' `tokens` fixture)."""
    tag = RUN
    admin = f"admin-{tag}@compose.example.org"
    compose.exec("worker-1", "chateval", "admin", "create-user", admin, "--admin", "--password-stdin", input=PASSWORD)
    tokens = json.loads(
        compose.python("worker-1", TOKENS, admin, tag, ",".join(roles), PASSWORD).strip().splitlines()[-1]
    )
    checks.check("admin created by `chateval admin create-user` in worker-1", "admin" in tokens)
    # The compose file keeps the default of 5 submissions per user per day: one owner per scenario.
    return {role: [Hub(url, {"owner": tokens[role], "admin": tokens["admin"]}) for url in WEB_URLS] for role in roles}


def upload_approved(webs: list[Hub], name: str, dataset: str, lines: list[str], checks: Checks) -> dict:
    reply = webs[0].upload(f"{name}-{RUN}", dataset, lines)  # system names are unique: one run, one suffix
    checks.check(f"{name}: upload to web-1 answers 201", reply.status_code == 201, reply.text)
    [created] = reply.json()
    checks.check(f"{name}: approved", webs[0].approve(created["id"]).status_code == 200)
    return created


def end_to_end(checks: Checks, compose: Compose, webs: list[Hub]) -> None:
    lines = small_responses("compose-e2e")
    created = upload_approved(webs, "compose-e2e", DATASET, lines, checks)
    checks.check(
        "e2e: responses file stored in S3", file_key(created["responses_sha256"]) in s3_keys(compose, "files/")
    )
    done = wait_until("evaluated, seen by web-2", evaluated(webs[1], created["id"], role=None), timeout=300)
    checks.check("e2e: evaluated, seen publicly through web-2", done["status"] == "evaluated", done.get("error"))
    private = webs[1].submission(created["id"], "admin")
    checks.count(private)
    host = private["evaluation"]["worker_id"].rsplit(":", 1)[0]
    workers = {compose.hostname(w): w for w in WORKERS}
    once = host in workers and private["evaluation"]["attempts"] == 1
    checks.check("e2e: scored once by a worker container", once, private["evaluation"])
    compose.exec("worker-1", "sh", "-c", "cat > /tmp/compose-e2e.txt", input="\n".join(lines) + "\n")
    evaluate = ["chateval", "evaluate", "--dataset", DATASET, "--responses", "/tmp/compose-e2e.txt", "--json"]
    offline = compose.exec("worker-1", *evaluate)
    expected = {m["signature"]: m["corpus"] for m in json.loads(offline)["metrics"] if m.get("corpus") is not None}
    published = {s["signature"]: s["corpus"] for s in done["scores"]}
    checks.check("e2e: hub scores equal `chateval evaluate` on the same file", same(published, expected))
    compose.exec("worker-1", "chateval", "export", "--out", f"s3://{BUCKET}/snapshots")
    keys = s3_keys(compose, "snapshots/")
    scores = [key for key in keys if key.endswith("scores.jsonl")]
    manifest = any(key.endswith("manifest.json") for key in keys)
    checks.check("e2e: `chateval export` published a snapshot in S3", manifest and len(scores) == 1, sorted(keys))
    body = compose.python("s3", S3_READ, "get", scores[0], BUCKET)
    rows_ = [json.loads(line) for line in body.splitlines()[1:]]
    snapshot = {r["signature"]: r["corpus"] for r in rows_ if r["submission_id"] == created["id"]}
    checks.check("e2e: the snapshot holds the published scores", same(snapshot, published))


def same(a: dict, b: dict, rel: float = 1e-12) -> bool:
    return a.keys() == b.keys() and len(a) > 0 and all(abs(a[k] - b[k]) <= rel * max(abs(b[k]), 1e-300) for k in a)


def worker_killed(checks: Checks, compose: Compose, webs: list[Hub]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        name, lines = worker_kill.write_dataset(Path(folder) / f"kill-test-{RUN}")
        home = compose.python("worker-1", "from evaluation.settings import get_settings as s; print(s().user_datasets)")
        for service in ["web-1", "web-2", *WORKERS]:  # the dataset must be installed wherever the hub reads it
            compose.exec(service, "mkdir", "-p", home.strip())
            docker("cp", str(Path(folder) / name), f"{compose.container(service)}:{home.strip()}/{name}")
    containers = {compose.hostname(w): (w, compose.container(w)) for w in WORKERS}  # looked up before, not during
    created = upload_approved(webs, "compose-kill", name, lines, checks)

    def running():
        submission = webs[1].submission(created["id"], "admin")
        return submission if submission["status"] == "evaluating" and submission["evaluation"]["worker_id"] else None

    first = wait_until("the evaluation started", running, timeout=300, every=0.05)
    victim, container = containers[first["evaluation"]["worker_id"].rsplit(":", 1)[0]]
    try:
        docker("kill", "-s", "KILL", container)
        killed_at = time.monotonic()
        after = webs[1].submission(created["id"], "admin")
        missed = after["status"] == "evaluated" and after["evaluation"]["worker_losses"] == 0
        if not checks.check(f"kill: {victim} killed with SIGKILL mid-evaluation", not missed, "the job finished first"):
            return

        def retried():
            return webs[1].submission(created["id"], "admin")["evaluation"]["attempts"] > 1

        wait_until("the job re-run after the kill", retried, timeout=400, every=0.5)
        restarted = time.monotonic() - killed_at
        done = wait_until("the re-run finished", evaluated(webs[1], created["id"]), timeout=400, every=0.5)
        print(f"    re-run started {restarted:.0f} s, finished {time.monotonic() - killed_at:.0f} s after the kill")
    finally:
        compose.run("start", victim)  # back to two workers (`docker kill` is a deliberate stop: no restart policy)
    run = done["evaluation"]
    checks.check("kill: evaluated after the re-run", done["status"] == "evaluated", done.get("error"))
    checks.check("kill: one worker loss, two attempts", run["worker_losses"] == 1 and run["attempts"] == 2, run)
    survivor = next(w for w in WORKERS if w != victim)
    rerun_by = containers.get(run["worker_id"].rsplit(":", 1)[0], ("?",))[0]
    checks.check(f"kill: re-run by the other worker ({survivor})", rerun_by == survivor, run["worker_id"])
    signatures = [s["signature"] for s in done["scores"]]
    checks.check("kill: every metric scored exactly once", len(signatures) == len(set(signatures)) > 0)
    checks.count(done)


def redis_restarted(checks: Checks, compose: Compose, owners: list[list[Hub]]) -> None:
    ids, webs = [], owners[0]
    for i in range(6):  # two owners: 5 submissions per owner per day
        reply = owners[i // 3][i % 2].upload(f"compose-redis-{i}-{RUN}", DATASET, small_responses(f"compose-redis-{i}"))
        checks.check(f"redis: upload {i} answers 201", reply.status_code == 201, reply.text)
        ids.append(reply.json()[0]["id"])
    for submission_id in ids[:3]:
        approved = webs[0].approve(submission_id).status_code == 200
        checks.check(f"redis: {submission_id} approved before the stop", approved)
    compose.run("stop", "redis")
    for submission_id in ids[3:]:
        reply = webs[1].approve(submission_id)
        refused = reply.status_code == 503 and "queue unavailable" in reply.json().get("error", "")
        checks.check(f"redis: approving {submission_id} while Redis is down answers 503", refused, reply.text)
    compose.run("start", "redis")
    for submission_id in ids:
        submission = wait_until(f"submission {submission_id}", evaluated(webs[0], submission_id), timeout=400, every=1)
        checks.count(submission)
        ok = submission["status"] == "evaluated" and submission["evaluation"]["attempts"] == 1
        checks.check(f"redis: {submission_id} evaluated once after the restart", ok, submission["evaluation"])


def queue_length(compose: Compose) -> int:
    """Jobs waiting in Redis: the lengths of huey's queue lists."""
    keys = compose.exec("redis", "redis-cli", "--scan", "--pattern", "huey.redis.*").split()
    return sum(int(compose.exec("redis", "redis-cli", "LLEN", key).strip() or 0) for key in keys)


def redis_queue_kept(checks: Checks, compose: Compose, webs: list[Hub]) -> None:
    """Jobs sent to Redis while no worker consumes them are still there after `restart redis` (append-only file)."""
    ids = []
    for i in range(3):
        reply = webs[i % 2].upload(f"compose-queued-{i}-{RUN}", DATASET, small_responses(f"compose-queued-{i}"))
        checks.check(f"queued: upload {i} answers 201", reply.status_code == 201, reply.text)
        ids.append(reply.json()[0]["id"])
    compose.run("stop", *WORKERS)
    try:
        for submission_id in ids:
            checks.check(
                f"queued: {submission_id} approved, no worker running",
                webs[0].approve(submission_id).status_code == 200,
            )
        queued = queue_length(compose)
        checks.check(f"queued: the jobs wait in Redis ({queued} queued)", queued >= len(ids), queued)
        compose.run("restart", "redis")
        wait_until("Redis answers", lambda: "PONG" in compose.exec("redis", "redis-cli", "ping"), 60, 1)
        checks.check("queued: `restart redis` kept every queued job", queue_length(compose) == queued)
    finally:
        compose.run("start", *WORKERS)
    for submission_id in ids:
        submission = wait_until(f"submission {submission_id}", evaluated(webs[0], submission_id), timeout=400, every=1)
        checks.count(submission)
        ok = submission["status"] == "evaluated" and submission["evaluation"]["attempts"] == 1
        checks.check(f"queued: {submission_id} evaluated once by a restarted worker", ok, submission["evaluation"])


def worker_crash(checks: Checks, compose: Compose, webs: list[Hub]) -> None:
    """A worker's process killed from outside Docker (as the kernel's OOM killer does) is brought back by the
    compose file's `restart: unless-stopped` (`docker kill` counts as a deliberate stop and is not restarted).
    Needs the engine on this machine (its processes visible here)."""
    container = compose.container("worker-2")
    state = "{{.State.Pid}} {{.RestartCount}}"
    pid, restarts = map(int, docker("inspect", "-f", state, container).split())
    if not Path(f"/proc/{pid}").exists():
        print("    skipped: the engine's processes are not visible from here (Docker Desktop?)")
        return
    os.kill(pid, signal.SIGKILL)

    def back() -> bool:
        now_pid, now_restarts = map(int, docker("inspect", "-f", state, container).split())
        return now_pid not in (0, pid) and now_restarts > restarts

    wait_until("worker-2 restarted by its restart policy", back, timeout=120, every=1)
    checks.check("crash: worker-2 restarted by `restart: unless-stopped`", True)


def s3_cut(checks: Checks, compose: Compose, webs: list[Hub]) -> None:
    lines = small_responses("compose-s3-outage")
    before = rows(compose), s3_keys(compose, "files/")
    s3 = compose.container("s3")
    [network] = json.loads(docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", s3))
    docker("network", "disconnect", network, s3)  # moto keeps its objects in memory: cut it off, do not stop it
    try:
        reply = webs[0].upload(f"compose-s3-{RUN}", DATASET, lines)
    finally:
        docker("network", "connect", "--alias", "s3", network, s3)
    refused = reply.status_code == 503 and "nothing was saved" in reply.json().get("error", "")
    checks.check("s3: upload while S3 is unreachable answers 503", refused, reply.text)
    checks.check("s3: with a Retry-After", int(reply.headers.get("Retry-After", 0)) > 0, dict(reply.headers))
    checks.check("s3: no row and no object left behind", (rows(compose), s3_keys(compose, "files/")) == before)
    created = upload_approved(webs, "compose-s3", DATASET, lines, checks)
    checks.check("s3: stored once S3 is back", file_key(created["responses_sha256"]) in s3_keys(compose, "files/"))
    done = wait_until("evaluated after the outage", evaluated(webs[1], created["id"]), timeout=300)
    checks.check("s3: evaluated after the outage", done["status"] == "evaluated", done.get("error"))
    checks.count(done)


def wait_healthy(compose: Compose, timeout: float = 600) -> None:
    def healthy() -> bool:
        states = [docker("inspect", "-f", "{{.State.Health.Status}}", compose.container(w)).strip() for w in WEBS]
        return all(state == "healthy" for state in states)

    wait_until("web-1 and web-2 healthy", healthy, timeout=timeout, every=2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", "-p", default="chateval")
    parser.add_argument("--file", "-f", default=str(REPO / "docker-compose.yml"))
    parser.add_argument("--up", action="store_true", help="build and start the project first")
    parser.add_argument("--down", action="store_true", help="remove the project (volumes too) at the end")
    parser.add_argument("--skip", default="", help="comma-separated scenarios to skip: e2e,kill,redis,queued,crash,s3")
    args = parser.parse_args(argv)
    compose = Compose(args.project, Path(args.file))
    if args.up and "HUB_SECRET_KEY" not in os.environ:
        compose.env["HUB_SECRET_KEY"] = secrets.token_urlsafe(32)
    started = time.monotonic()
    checks = Checks()
    try:
        if args.up:
            compose.run("up", "-d", "--build", timeout=1800)
        wait_healthy(compose)
        checks.check("web-1 and web-2 healthy", True)
        hubs = make_hubs(compose, checks, ["e2e", "kill", "redis-a", "redis-b", "queued", "s3"])
        skip = set(args.skip.split(","))
        for name, body, webs in [
            ("e2e", end_to_end, hubs["e2e"]),
            ("kill", worker_killed, hubs["kill"]),
            ("redis", redis_restarted, [hubs["redis-a"], hubs["redis-b"]]),
            ("queued", redis_queue_kept, hubs["queued"]),
            ("crash", worker_crash, hubs["queued"]),
            ("s3", s3_cut, hubs["s3"]),
        ]:
            if name not in skip:
                checks.scenario(name, body, compose, webs)
        tally = checks.tally
        ok = tally["submitted"] > 0 and tally["completed"] == tally["submitted"] and not tally["duplicated"]
        checks.check(f"tally {tally}: every submission completed once", ok and not tally["lost"])
    finally:
        if args.down:
            compose.run("down", "-v", timeout=600)
    failed = [row for row in checks.rows if not row[1]]
    passed = len(checks.rows) - len(failed)
    print(f"\n{passed} of {len(checks.rows)} checks passed in {time.monotonic() - started:.0f} s")
    for name, _, detail in failed:
        print(f"FAILED: {name}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
