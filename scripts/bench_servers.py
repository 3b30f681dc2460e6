"""The plumbing the hub benchmarks share: a fresh database (SQLite or a throwaway PostgreSQL database), the
environment a hub server runs in, a real `uvicorn` server on a free port in its own process group, the CPU its
processes use, and what its log and a py-spy profile of it say. Used by scripts/bench_ratings.py, bench_web.py and
bench_snapshot.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

POSTGRES_ADMIN_URL = os.environ.get("HUB_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")


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


# ---- what the server did ---------------------------------------------------------------------------------


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
