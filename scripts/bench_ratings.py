"""Benchmark: sustained rating submissions from many concurrent simulated raters against a running hub server, and
zero lost or duplicated ratings after the server is killed (SIGKILL) and restarted mid-run.

For each database (SQLite, the default, and PostgreSQL in a fresh database):
1. a fresh data folder and database, migrated; an admin; the echo and retrieval baselines, scored;
2. a real server: `uvicorn hub.web.app:create_app --factory --workers N` on 127.0.0.1 and a free port;
3. several experiments echo vs retrieval on hub-open-v1 (120 prompts in 12 tasks of 10 pairs plus an attention
   check and a repeat, `--raters-per-prompt` raters each), launched, each with a cohort invite (made through the
   services the admin API calls, before the server starts);
4. phase 1: `--raters` simulated raters (asyncio + httpx), each looping claim -> submit (random answers, no
   thinking time) for `--seconds`; a rater moves to the next experiment when one has nothing left for it;
5. phase 2: the same, with the server's whole process group killed with SIGKILL after `--seconds`/2 and started
   again on the same database, then `--seconds`/2 more once it answers (its rate counts the time it was down); a
   rater whose request got no answer sends it again (the same submission: a rater clicking again);
6. the server stopped, then checked with SQL: every submission acknowledged with a completion code has its code
   and exactly its answers stored; no (assignment, item) rated twice; no partial submission; task counters equal
   the rows.

A judgement is one rated item (pairs and the quality checks riding along in a task). Reference, in the same
process: the same claim -> submit loop through the services directly (one thread, no HTTP) on the same database.

Target (reported, not asserted): > 300 judgements/s on PostgreSQL, zero lost or duplicated ratings.
Usage: python scripts/bench_ratings.py [--db sqlite|postgres|both] [--raters 100] [--seconds 20] [--workers 2]
       [--pace SECONDS]

Reading the latencies: with no pause (the default) the raters are a closed loop that always has 100 requests in
flight, so by Little's law the mean latency is raters / requests per second, whatever the server does; what tells a
stall from plain queueing for the CPU is whether the requests per second stay at the server's capacity (compare
--raters 10) and whether the database connections are busy while requests wait. On PostgreSQL the steady phase
samples pg_stat_activity: "idle in transaction" connections are connections held by a request that is not running
(waiting for a thread or for the client): a stall. `--pace S` models people: a rater spends S seconds per judgement
on average (0.5 to 1.5 times that per task) between claiming a task and submitting it, and the raters arrive over
one task's time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

DATASET = "hub-open-v1"
TARGET = 300.0
P99_TARGET_MS = 1000.0  # claims and submits in the steady phase
POSTGRES_ADMIN_URL = os.environ.get("HUB_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")
RETRY_AFTER_CAP_S = 5.0  # the longest a rater honours a reply's Retry-After
RETRY_DEFAULT_S = 0.1  # the pause before sending again when a reply names no Retry-After
ITEMS_PER_TASK_GUESS = 12  # 10 pairs + 1 attention check + 1 repeat, for sizing only
TASKS_PER_EXPERIMENT_GUESS = 12


# ---- one database, one server ----------------------------------------------------------------------------


@contextmanager
def fresh_database(kind: str, folder: Path):
    """The URL of a new, empty database: SQLite in `folder`, or a PostgreSQL database dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'hub.db'}"
        return
    import sqlalchemy as sa

    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"bench_ratings_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def server_environment(folder: Path, url: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HUB_DATA_DIR": str(folder / "hub-data"),
        "HUB_DATABASE_URL": url,
        "HUB_SECRET_KEY": "bench-ratings-" + uuid.uuid4().hex,
        "PYTHONPATH": str(ROOT),
        "HUB_NEW_RATERS_PER_CLIENT": "100000/minute",  # all simulated raters come from 127.0.0.1
    }
    for name in ("HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        env.pop(name, None)
    return env


def use_environment(env: dict[str, str]) -> None:
    """Point this process's hub settings at `env` (the server's), forgetting anything cached."""
    for name in ("HUB_DATA_DIR", "HUB_DATABASE_URL", "HUB_SECRET_KEY"):
        os.environ[name] = env[name]
    for name in ("HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        os.environ.pop(name, None)
    from hub import db, queue, settings, storage

    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


def prepare_database(experiments: int, raters_per_prompt: int) -> list[dict]:
    """Migrate; an admin, the echo and retrieval baselines (scored) and `experiments` launched experiments of echo
    vs retrieval on hub-open-v1, each with a cohort invite: [{id, token}] (the services the admin API calls)."""
    from sqlmodel import Session, select

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.models import System
    from hub.services.accounts.accounts import create_user
    from hub.services.human import experiments as experiment_service
    from hub.services.human import raters
    from hub.services.submissions.demo import seed_baselines
    from hub.storage import get_storage

    upgrade()
    engine = get_engine()
    seed_baselines(engine, get_storage(), names=["echo", "retrieval"])
    made = []
    with Session(engine) as session:
        admin = create_user(
            session, email="bench@example.org", password="correct horse battery", display_name="bench", is_admin=True
        )
        systems = {s.name: s.id for s in session.exec(select(System))}
        for i in range(experiments):
            form = experiment_service.ExperimentForm(
                dataset=DATASET,
                system_a_id=systems["echo"],
                system_b_id=systems["retrieval"],
                raters_per_prompt=raters_per_prompt,
                seed=i,
                title=f"bench {i}",
            )
            experiment = experiment_service.create_experiment(session, admin, form, get_storage())
            experiment_service.launch(session, admin, experiment.id)
            # every simulated rater may join every study (the cap on a cohort link's raters is 50 by default)
            token = raters.create_invite(session, admin, experiment, label="bench", cohort=True, max_raters=100_000)[1]
            made.append({"id": experiment.id, "token": token})
    engine.dispose()
    return made


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`uvicorn hub.web.app:create_app --factory --workers N` in its own process group (so SIGKILL takes all)."""

    def __init__(self, env: dict[str, str], port: int, workers: int, log: Path):
        self.env, self.port, self.workers, self.log = env, port, workers, log
        self.process: subprocess.Popen | None = None
        self.base_url = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        command = [sys.executable, "-m", "uvicorn", "hub.web.app:create_app", "--factory"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers)]
        command += ["--log-level", "warning", "--no-access-log"]
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                command, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds until the API answers (all workers need not be up yet)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}; see {self.log}")
            try:
                if httpx.get(f"{self.base_url}/api/experiments", timeout=2).status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the server did not answer within {timeout:.0f} s; see {self.log}")

    def kill9(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


# ---- simulated raters ------------------------------------------------------------------------------------


@dataclass
class Ack:
    assignment_id: int
    code: str
    choices: dict[int, str]


@dataclass
class Phase:
    name: str
    seconds: float  # planned; becomes the measured length when the phase ends
    deadline: float = 0.0
    judgements: int = 0  # items in submissions acknowledged before the deadline
    submits: int = 0
    submit_ms: list[float] = field(default_factory=list)
    claim_ms: list[float] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    unanswered: int = 0  # requests that got no answer (connection lost), sent again
    resent_acknowledged: int = 0  # submissions acknowledged only on a resend
    raters_out_of_work: int = 0
    downtime_s: float | None = None
    connection_states: Counter = field(default_factory=Counter)  # pg_stat_activity: state -> sum over samples
    samples: int = 0
    idle_in_transaction_ms: list[float] = field(default_factory=list)  # how long each such connection had been so
    long_idle_statements: Counter = field(default_factory=Counter)  # the last statement of those idle over 200 ms


def retry_delay(reply: httpx.Response) -> float:
    """Seconds to wait before sending again after an error reply: its Retry-After (seconds, capped), else a pause."""
    try:
        return min(max(float(reply.headers["Retry-After"]), 0.0), RETRY_AFTER_CAP_S)
    except (KeyError, ValueError):  # absent, or an HTTP date: the default pause
        return RETRY_DEFAULT_S


async def pause_before_retry(reply: httpx.Response, phase: Phase) -> None:
    """Wait as the reply asks (never past the phase's deadline), so an overloaded hub is not hammered at once."""
    await asyncio.sleep(max(0.0, min(retry_delay(reply), phase.deadline - time.monotonic())))


async def rater(
    index: int,
    client: httpx.AsyncClient,
    invites: list[str],
    phase: Phase,
    acks: list[Ack],
    pace: float = 0.0,
) -> None:
    rng = random.Random(index)
    label = f"rater-{index:03d}"
    k = 0
    pending: tuple[str, int, str, dict[int, str]] | None = None  # a claimed task: token, assignment, key, answers
    resent = False
    if pace:  # people arrive over one task's time, not all in the same second
        await asyncio.sleep(rng.uniform(0, pace * ITEMS_PER_TASK_GUESS))
    while time.monotonic() < phase.deadline:
        if pending is None:
            if k >= len(invites):
                phase.raters_out_of_work += 1
                return
            started = time.perf_counter()
            try:
                reply = await client.post(f"/api/rate/{invites[k]}/claim", params={"rater_label": label})
            except httpx.TransportError as exc:
                phase.unanswered += 1
                phase.errors[f"claim: {type(exc).__name__}"] += 1
                await asyncio.sleep(0.1)
                continue
            phase.claim_ms.append((time.perf_counter() - started) * 1000)
            if reply.status_code == 404:  # nothing left for this rater in this experiment
                phase.errors["claim: 404, rater moves to the next experiment (not an error)"] += 1
                k += 1
                continue
            if reply.status_code != 200:
                phase.errors[f"claim: HTTP {reply.status_code}"] += 1
                await pause_before_retry(reply, phase)
                continue
            task = reply.json()
            answers = {item["id"]: rng.choice(task["choices"]) for item in task["items"]}
            pending, resent = (invites[k], task["assignment_id"], task["key"], answers), False
            if pace:  # a person reading and judging each item, some faster, some slower
                thinking = pace * len(answers) * rng.uniform(0.5, 1.5)
                await asyncio.sleep(max(0.0, min(thinking, phase.deadline - time.monotonic())))
                if time.monotonic() >= phase.deadline:
                    break
        token, assignment_id, key, answers = pending
        started = time.perf_counter()
        try:
            reply = await client.post(
                f"/api/rate/{token}/assignments/{assignment_id}",
                json={"key": key, "choices": {str(i): c for i, c in answers.items()}},
            )
        except httpx.TransportError as exc:  # no answer: send the same submission again
            phase.unanswered += 1
            phase.errors[f"submit: {type(exc).__name__}"] += 1
            resent = True
            await asyncio.sleep(0.1)
            continue
        elapsed = time.perf_counter() - started
        if reply.status_code != 200:
            phase.errors[f"submit: HTTP {reply.status_code}"] += 1
            if reply.status_code >= 500 or reply.status_code == 429:
                await pause_before_retry(reply, phase)
                continue  # send it again (a repeated submission is recognised)
            pending = None
            continue
        acks.append(Ack(assignment_id, reply.json()["completion_code"], answers))
        pending = None
        phase.submit_ms.append(elapsed * 1000)
        phase.resent_acknowledged += resent
        if time.monotonic() <= phase.deadline:
            phase.submits += 1
            phase.judgements += len(answers)


async def run_phase(
    server: Server, invites: list[str], raters: int, phase: Phase, acks: list[Ack], crash: bool, pace: float = 0.0
) -> None:
    limits = httpx.Limits(max_connections=raters + 10, max_keepalive_connections=raters + 10)
    async with httpx.AsyncClient(base_url=server.base_url, limits=limits, timeout=60) as client:
        started = time.monotonic()
        phase.deadline = started + phase.seconds
        crasher = asyncio.create_task(crash_midway(server, phase)) if crash else None
        await asyncio.gather(*(rater(i, client, invites, phase, acks, pace) for i in range(raters)))
        if crasher is not None:
            await crasher
        phase.seconds = phase.deadline - started


async def crash_midway(server: Server, phase: Phase) -> None:
    """Half-way: SIGKILL the server and start it again; the raters get the other half once it answers."""
    await asyncio.sleep(phase.seconds / 2)
    phase.deadline = math.inf
    killed = time.monotonic()
    server.kill9()
    server.start()
    await asyncio.to_thread(server.wait_ready)
    phase.downtime_s = time.monotonic() - killed
    phase.deadline = time.monotonic() + phase.seconds / 2


@contextmanager
def sample_connections(url: str, phase: Phase, every: float = 0.1):
    """While inside, count the states of the server's PostgreSQL connections (pg_stat_activity) every `every` s."""
    import sqlalchemy as sa

    if not url.startswith("postgresql"):
        yield
        return
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    done = threading.Event()
    query = sa.text(
        "SELECT coalesce(state, 'none'), 1000 * extract(epoch FROM clock_timestamp() - state_change), "
        "left(regexp_replace(query, '\\s+', ' ', 'g'), 90) "
        "FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
    )

    def sample() -> None:
        with engine.connect() as connection:
            while not done.wait(every):
                rows = connection.execute(query).all()
                phase.connection_states.update(state for state, _, _ in rows)
                idle = [(float(ms), query) for state, ms, query in rows if state == "idle in transaction"]
                phase.idle_in_transaction_ms += [ms for ms, _ in idle]
                phase.long_idle_statements.update(query for ms, query in idle if ms > 200)
                phase.samples += 1
                connection.rollback()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join(timeout=5)
        engine.dispose()


def cpu_seconds(process_group: int) -> float:
    """User + system CPU seconds used so far by the live processes of a process group (Linux /proc)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == process_group:  # pgrp; utime and stime are fields 14 and 15 of the whole line
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


# ---- the reference: the services directly, one thread ----------------------------------------------------


def reference_rate(experiment_id: int, seconds: float) -> float:
    """Judgements/s of claim -> submit through the services in this process (no HTTP, one thread)."""
    from sqlmodel import Session

    from hub.db import get_engine
    from hub.models import Experiment
    from hub.services.human import assignments, raters

    engine = get_engine()
    rng = random.Random(0)
    judgements, i, idle = 0, 0, 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds and idle < 50:
        with Session(engine) as session:
            rater = raters.rater_for(session, "hub", f"reference-{i % 50}")
            assignment = assignments.claim_task(session, session.get(Experiment, experiment_id), rater)
            i += 1
            if assignment is None:  # this rater has done every task it may
                idle += 1
                continue
            idle = 0
            items = assignments.task_items(session, assignment.task_id)
            assignments.submit(session, assignment, {item.id: rng.choice(["left", "tie", "right"]) for item in items})
            judgements += len(items)
    rate = judgements / (time.perf_counter() - started)
    engine.dispose()
    return rate


# ---- the check -------------------------------------------------------------------------------------------


# The checks of `verify` that must be zero: the exit code fails on any of them, and the table's `other` column sums
# those without a column of their own. "committed, answer lost in the crash" is not one of them: it counts
# submitted assignments no rater was acknowledged, i.e. the server committed and was SIGKILLed before its reply left,
# and the rater's resend (which the hub answers with the same code) got no answer before its phase ended. The work is
# stored whole and once (the checks above would see otherwise); only the rater never saw its completion code, which
# is what a crash between commit and reply does. So it is printed with the checks, but is neither in `other` nor a
# failure.
INTEGRITY_CHECKS = (
    "lost",
    "duplicated",
    "wrong answer stored",
    "completion code differs",
    "acknowledged twice",
    "partial submissions",
    "ratings without a submitted assignment",
    "tasks over their slots",
    "task counters off",
)


def integrity_problems(checks: dict[str, int]) -> dict[str, int]:
    """The integrity checks that are not zero."""
    return {name: checks[name] for name in INTEGRITY_CHECKS if checks[name]}


def verify(url: str, experiment_ids: list[int], acks: list[Ack]) -> dict[str, int]:
    """Plain SQL against the database: what the acknowledged submissions promised is there, once."""
    import sqlalchemy as sa

    from hub.db import make_engine

    engine = make_engine(url)
    ids = {"ids": experiment_ids}

    def rows(query: str) -> list[tuple]:
        with engine.connect() as connection:
            statement = sa.text(query).bindparams(sa.bindparam("ids", expanding=True))
            return [tuple(r) for r in connection.execute(statement, ids)]

    stored: dict[int, dict[int, list[str]]] = {}
    for assignment_id, item_id, choice in rows(
        "SELECT assignment_id, item_id, choice FROM rating WHERE experiment_id IN :ids AND assignment_id IS NOT NULL"
    ):
        stored.setdefault(assignment_id, {}).setdefault(item_id, []).append(choice)
    codes = dict(
        (r[0], (r[1], r[2]))
        for r in rows("SELECT id, completion_code, status FROM assignment WHERE experiment_id IN :ids")
    )
    lost = wrong = code_mismatch = 0
    for ack in acks:
        got = stored.get(ack.assignment_id, {})
        for item_id, choice in ack.choices.items():
            if item_id not in got:
                lost += 1
            elif got[item_id] != [choice]:
                wrong += 1
        code, _status = codes.get(ack.assignment_id, (None, None))
        code_mismatch += code != ack.code
    acked = {a.assignment_id for a in acks}
    submitted = {a for a, (_, status) in codes.items() if status == "submitted"}
    result = {
        "acknowledged submissions": len(acks),
        "acknowledged judgements": sum(len(a.choices) for a in acks),
        "stored judgements": sum(len(v) for items in stored.values() for v in items.values()),
        "lost": lost,
        "wrong answer stored": wrong,
        "completion code differs": code_mismatch,
        "duplicated": sum(len(v) - 1 for items in stored.values() for v in items.values()),
        "acknowledged twice": len(acks) - len(acked),
        "committed, answer lost in the crash": len(submitted - acked),
        "partial submissions": rows(
            """SELECT COUNT(*) FROM assignment a WHERE a.experiment_id IN :ids AND a.status = 'submitted'
               AND (SELECT COUNT(*) FROM rating r WHERE r.assignment_id = a.id)
                <> (SELECT COUNT(*) FROM experimentitem i WHERE i.task_id = a.task_id)"""
        )[0][0],
        "ratings without a submitted assignment": rows(
            """SELECT COUNT(*) FROM rating r LEFT JOIN assignment a ON a.id = r.assignment_id
               WHERE r.experiment_id IN :ids AND r.assignment_id IS NOT NULL
               AND (a.id IS NULL OR a.status <> 'submitted')"""
        )[0][0],
        "tasks over their slots": rows(
            """SELECT COUNT(*) FROM task t WHERE t.experiment_id IN :ids AND t.slots <
               (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id AND a.status <> 'released')"""
        )[0][0],
        "task counters off": rows(
            """SELECT COUNT(*) FROM task t WHERE t.experiment_id IN :ids AND (
                 t.claimed <> (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id AND a.status <> 'released')
                 OR t.completed <> (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id
                                    AND a.status = 'submitted'))"""
        )[0][0],
    }
    engine.dispose()
    return result


def start_profiler(server: Server, folder: Path, kind: str, seconds: float) -> subprocess.Popen:
    """py-spy (not a dependency of the project: `pip install py-spy`) sampling every server process."""
    folder.mkdir(parents=True, exist_ok=True)
    assert server.process is not None
    spy = Path(sys.executable).with_name("py-spy")
    command = [str(spy), "record", "--pid", str(server.process.pid), "--subprocesses", "--nonblocking"]
    command += ["--rate", "200", "--duration", str(max(1, int(seconds) - 1)), "--format", "raw"]
    command += ["-o", str(folder / f"{kind}.txt")]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def summarize_profile(raw: Path, top: int = 25) -> None:
    """Where the server's samples went (idle threads waiting for work left out): the frames most often on the
    stack (inclusive), and most often on top (self)."""
    if not raw.exists():
        print(f"  (no profile written to {raw})")
        return
    inclusive: Counter = Counter()
    own: Counter = Counter()
    total = 0
    idle = ("_worker (concurrent/futures", "wait (threading.py", "select (selectors.py", "run_forever")
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not count.isdigit() or any(frames[-1].startswith(i) for i in idle):
            continue
        n = int(count)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    print(f"  profile: {total} busy samples ({raw})")
    for title, counter in (("inclusive", inclusive), ("self", own)):
        print(f"  top {title}:")
        for frame, n in counter.most_common(top):
            print(f"    {100 * n / max(total, 1):5.1f}%  {frame[:150]}")


def errors_in_log(log: Path) -> Counter:
    """The final line of every traceback in the server's log, and every 503's cause (the busy-database warning,
    without its path), counted."""
    found: Counter = Counter()
    lines = log.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if "database busy or unavailable on" in line:
            found["503: " + line.split(": ", 1)[-1][:200]] += 1
        if line.startswith("Traceback"):
            j = i + 1
            while j < len(lines) and (lines[j].startswith(" ") or not lines[j].strip()):
                j += 1
            if j < len(lines):
                found[lines[j]] += 1
    return found


# ---- driver ----------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def bench_database(kind: str, args: argparse.Namespace) -> dict:
    print(f"\n== {kind} ==", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"bench-ratings-{kind}-") as scratch:
        folder = Path(scratch)
        with fresh_database(kind, folder) as url:
            env = server_environment(folder, url)
            use_environment(env)
            capacity = args.raters_per_prompt * TASKS_PER_EXPERIMENT_GUESS * ITEMS_PER_TASK_GUESS
            count = args.experiments or max(3, math.ceil(2 * args.seconds * args.expected_rate / capacity) + 1)
            started = time.perf_counter()
            made = prepare_database(count + 1, args.raters_per_prompt)
            print(f"{count + 1} experiments created and launched in {time.perf_counter() - started:.1f} s", flush=True)
            reference_experiment, experiments = made[0], made[1:]
            server = Server(env, free_port(), args.workers, folder / "server.log")
            server.start()
            try:
                print(f"server: {args.workers} worker(s) ready in {server.wait_ready():.1f} s", flush=True)
                invites = [e["token"] for e in experiments]
                acks: list[Ack] = []
                steady = Phase("steady", args.seconds)
                profiler = start_profiler(server, args.profile, kind, args.seconds) if args.profile else None
                print(f"load average before the run: {os.getloadavg()[0]:.1f}", flush=True)
                server_cpu, client_cpu = cpu_seconds(server.process.pid), time.process_time()
                with sample_connections(url, steady):
                    asyncio.run(run_phase(server, invites, args.raters, steady, acks, crash=False, pace=args.pace))
                report_phase(steady, args.raters)
                server_cores = (cpu_seconds(server.process.pid) - server_cpu) / steady.seconds
                client_cores = (time.process_time() - client_cpu) / steady.seconds
                print(
                    f"  CPU cores busy in the steady phase: server {server_cores:.2f}, these raters {client_cores:.2f} "
                    f"(of {os.cpu_count()}; load average now {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
                if profiler is not None:
                    profiler.wait(timeout=args.seconds + 60)
                    summarize_profile(args.profile / f"{kind}.txt")
                crashed = Phase("kill -9 + restart", args.seconds)
                asyncio.run(run_phase(server, invites, args.raters, crashed, acks, crash=True, pace=args.pace))
                report_phase(crashed, args.raters)
            except BaseException:
                print(f"server log (tail):\n{server.log.read_text()[-4000:]}", file=sys.stderr)
                raise
            finally:
                server.stop()
            checks = verify(url, [e["id"] for e in experiments], acks)
            for name, value in checks.items():
                print(f"  {name}: {value}")
            reference = reference_rate(reference_experiment["id"], args.reference_seconds)
            print(f"reference (services directly, one thread, no HTTP): {reference:.0f} judgements/s")
            server_errors = errors_in_log(folder / "server.log")
            for line, count in server_errors.most_common(6):
                print(f"  server log: {count} x {line[:300]}")
    return {"kind": kind, "steady": steady, "crashed": crashed, "checks": checks, "reference": reference}


def report_phase(phase: Phase, raters: int) -> None:
    rate = phase.judgements / phase.seconds
    latencies = phase.submit_ms + phase.claim_ms
    requests_per_s = len(latencies) / phase.seconds
    extra = f", down {phase.downtime_s:.1f} s" if phase.downtime_s is not None else ""
    print(
        f"{phase.name}: {rate:.0f} judgements/s ({phase.submits / phase.seconds:.1f} submits/s{extra}); "
        f"submit p50 {percentile(phase.submit_ms, 50):.0f} ms p99 {percentile(phase.submit_ms, 99):.0f} ms; "
        f"claim p50 {percentile(phase.claim_ms, 50):.0f} ms p99 {percentile(phase.claim_ms, 99):.0f} ms; "
        f"no answer {phase.unanswered}, resent then acknowledged {phase.resent_acknowledged}, "
        f"out of work {phase.raters_out_of_work}",
        flush=True,
    )
    if latencies:
        print(
            f"  {requests_per_s:.0f} answered requests/s, mean latency {sum(latencies) / len(latencies):.0f} ms "
            f"(Little's law for {raters} raters with no pause: {1000 * raters / requests_per_s:.0f} ms)",
            flush=True,
        )
    if phase.samples:
        states = {state: round(total / phase.samples, 1) for state, total in phase.connection_states.most_common()}
        print(f"  PostgreSQL connections, mean over {phase.samples} samples: {states}", flush=True)
        if idle := phase.idle_in_transaction_ms:
            print(
                f"  idle in transaction for (when sampled): p50 {percentile(idle, 50):.0f} ms, "
                f"p99 {percentile(idle, 99):.0f} ms, max {max(idle):.0f} ms",
                flush=True,
            )
        for statement, count in phase.long_idle_statements.most_common(4):
            print(f"    {count} x idle in transaction > 200 ms after: {statement}", flush=True)
    if phase.errors:
        print(f"  errors: {dict(phase.errors)}")


def print_table(results: list[dict], args: argparse.Namespace) -> None:
    header = (
        "database", "judg/s", "submit p50", "submit p99", "claim p99", "crash judg/s", "down s", "lost", "dup",
        "other", "ref 1-thread", "ratio",
    )  # fmt: skip
    lines = [header]
    for r in results:
        steady, crashed, checks = r["steady"], r["crashed"], r["checks"]
        rate = steady.judgements / steady.seconds
        other = sum(checks[k] for k in INTEGRITY_CHECKS if k not in ("lost", "duplicated"))  # they have columns
        lines.append(
            (
                f"{r['kind']} #{r['run']}",
                f"{rate:.0f}",
                f"{percentile(steady.submit_ms, 50):.0f} ms",
                f"{percentile(steady.submit_ms, 99):.0f} ms",
                f"{percentile(steady.claim_ms, 99):.0f} ms",
                f"{crashed.judgements / crashed.seconds:.0f}",
                f"{crashed.downtime_s:.1f}" if crashed.downtime_s is not None else "-",
                str(checks["lost"]),
                str(checks["duplicated"]),
                str(other),
                f"{r['reference']:.0f}",
                f"{rate / r['reference']:.1f}x" if r["reference"] else "-",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    print(
        f"\n{args.raters} raters (pace {args.pace:g} s per judgement), {args.seconds:.0f} s a phase, "
        f"{args.workers} server worker(s), {os.cpu_count()} CPUs"
    )
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
    for r in results:
        rate = r["steady"].judgements / r["steady"].seconds
        zero = r["checks"]["lost"] == 0 and r["checks"]["duplicated"] == 0
        verdict = "met" if rate > TARGET else "NOT met"
        target = f"target > {TARGET:.0f} judgements/s: {verdict}" if r["kind"] == "postgres" else "no target"
        p99 = max(percentile(r["steady"].submit_ms, 99), percentile(r["steady"].claim_ms, 99))
        p99_verdict = "met" if p99 < P99_TARGET_MS else "NOT met"
        print(
            f"{r['kind']} #{r['run']}: {rate:.0f} judgements/s ({target}); p99 {p99:.0f} ms (target < "
            f"{P99_TARGET_MS:.0f} ms: {p99_verdict}); zero lost/duplicated: {'yes' if zero else 'NO'}"
        )
        if problems := integrity_problems(r["checks"]):
            print(f"{r['kind']}: INTEGRITY PROBLEMS: {problems}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--raters", type=int, default=100, help="concurrent simulated raters")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--workers", type=int, default=2, help="server worker processes")
    parser.add_argument("--raters-per-prompt", type=int, default=50, help="slots per task (the API allows 50)")
    parser.add_argument("--experiments", type=int, default=0, help="experiments to spread the raters over (0: enough)")
    parser.add_argument("--expected-rate", type=float, default=1500.0, help="judgements/s to size the experiments")
    parser.add_argument("--reference-seconds", type=float, default=3.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--profile", type=Path, help="sample the server with py-spy in phase 1, into this folder")
    parser.add_argument("--repeat", type=int, default=1, help="runs in a row per database (each on a fresh one)")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds a rater spends per judgement (0: no pause)")
    args = parser.parse_args(argv)
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    results = [
        {**bench_database(kind, args), "run": run} for kind in kinds for run in range(1, max(1, args.repeat) + 1)
    ]
    print_table(results, args)
    if args.json:
        figures = [
            {
                "database": r["kind"],
                "run": r["run"],
                "judgements_per_s": r["steady"].judgements / r["steady"].seconds,
                "submit_p50_ms": percentile(r["steady"].submit_ms, 50),
                "submit_p99_ms": percentile(r["steady"].submit_ms, 99),
                "claim_p99_ms": percentile(r["steady"].claim_ms, 99),
                "crash_phase_judgements_per_s": r["crashed"].judgements / r["crashed"].seconds,
                "downtime_s": r["crashed"].downtime_s,
                "reference_judgements_per_s": r["reference"],
                **r["checks"],
            }
            for r in results
        ]
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    failed = any(integrity_problems(r["checks"]) for r in results)  # any integrity check not zero, not only lost/dup
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
