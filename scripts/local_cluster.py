"""The many-machine topology from local processes, for machines without a Docker engine (what docker-compose.yml
runs in containers): a fresh PostgreSQL database on this machine's server, a Redis server of its own (append-only
file on, so a restart keeps the queued jobs), moto's standalone S3-compatible server, two `chateval worker`
processes and two web processes (`chateval serve --no-embedded-worker`), each health-checked before the next starts.

    scripts/run_cluster.sh up                # start, print the URLs, run until Ctrl-C, then clean everything up
    scripts/run_cluster.sh start; ... stop   # the same in the background; `stop` reads the state in --dir
                                             # (the command line is scripts/cluster_cli.py)

The tests (tests/cluster/) drive the same `Cluster` class and inject faults through it: kill a worker, restart
Redis, cut the S3 endpoint the hub sees."""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
POSTGRES_ADMIN_URL = os.environ.get(
    "HUB_CLUSTER_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)
BUCKET = "chateval-hub"
DEFAULT_DIR = Path(tempfile.gettempdir()) / "chateval-cluster"
STATE = "cluster.json"
# The settings every hub process of the topology gets; docker-compose.yml's `x-hub-env` names the same ones
# (tests/cluster/test_compose_file.py checks that they agree).
HUB_ENV_KEYS = (
    "HUB_DATABASE_URL",
    "HUB_QUEUE_URL",
    "HUB_STORAGE_URL",
    "HUB_S3_ENDPOINT_URL",
    "HUB_SECRET_KEY",
    "HUB_DATA_DIR",
    "HUB_PUBLIC_URL",
    "HUB_DB_POOL_SIZE",
    "HUB_DB_MAX_OVERFLOW",
    "HUB_SWEEP_SECONDS",
    "HUB_STALLED_AFTER_SECONDS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
)


class ClusterError(RuntimeError):
    """A part did not start or answer in time (the message names it and its log file)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait(what: str, ready: Callable[[], bool], timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except Exception:  # not answering yet: connection refused, 5xx, missing table
            pass
        time.sleep(0.1)
    raise ClusterError(f"{what} not ready after {timeout:.0f} s" + (f" (log: {log})" if log else ""))


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.status == 200


@dataclass
class Part:
    """One process of the topology: started in a session of its own, output appended to `log`."""

    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen | None = None
    pid: int = 0
    started: str = ""  # the process's start time in clock ticks since boot: tells it from a reused pid

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.pid = self.process.pid
        self.started = _start_ticks(self.pid)

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return bool(self.pid) and _start_ticks(self.pid) == self.started

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
        """Signal the part's process group, wait for it, SIGKILL it if it outlives `timeout`."""
        if not self.pid or not self.alive():
            self.process = None
            return
        os.killpg(self.pid, sig)
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.alive():
            os.killpg(self.pid, signal.SIGKILL)
            if self.process is not None:
                self.process.wait(timeout=10)
        if self.process is not None:
            self.process.wait(timeout=10)
        self.process = None

    def state(self) -> dict:
        return {
            "name": self.name,
            "pid": self.pid,
            "started": self.started,
            "command": self.command,
            "log": str(self.log),
        }


def _start_ticks(pid: int) -> str:
    """Field 22 of /proc/PID/stat (start time); empty when the process is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return ""
    return "" if fields[0] == "Z" else fields[19]


@dataclass
class Cluster:
    root: Path
    web_ports: tuple[int, ...] = (0, 0)
    workers: int = 2
    postgres_admin_url: str = POSTGRES_ADMIN_URL
    redis_url: str = ""  # an existing Redis to use; empty: start one (the Redis restart fault needs that)
    redis_port: int = 0
    sweep_seconds: int = 15
    stalled_after_seconds: int = 60
    extra_env: dict[str, str] = field(default_factory=dict)
    database: str = ""
    parts: dict[str, Part] = field(default_factory=dict)
    s3_url: str = ""  # moto's address
    hub_s3_url: str = ""  # the S3 address the hub processes use (the tests put a cuttable gate in between)
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    # ---- addresses ----
    @property
    def database_url(self) -> str:
        return self.postgres_admin_url.rsplit("/", 1)[0] + f"/{self.database}"

    @property
    def queue_url(self) -> str:
        return self.redis_url or f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def web_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.web_ports]

    def hub_env(self) -> dict[str, str]:
        env = {
            "HUB_DATABASE_URL": self.database_url,
            "HUB_QUEUE_URL": self.queue_url,
            "HUB_STORAGE_URL": f"s3://{BUCKET}/files",
            "HUB_S3_ENDPOINT_URL": self.hub_s3_url or self.s3_url,
            "HUB_SECRET_KEY": self.secret_key,  # one key: a session cookie from one web process works on the other
            "HUB_DATA_DIR": str(self.root / "data"),
            "HUB_PUBLIC_URL": self.web_urls[0],
            "HUB_DB_POOL_SIZE": "5",  # six processes share one PostgreSQL
            "HUB_DB_MAX_OVERFLOW": "5",
            "HUB_SWEEP_SECONDS": str(self.sweep_seconds),
            "HUB_STALLED_AFTER_SECONDS": str(self.stalled_after_seconds),
            "AWS_ACCESS_KEY_ID": "cluster",  # moto takes any key
            "AWS_SECRET_ACCESS_KEY": "cluster",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        assert tuple(env) == HUB_ENV_KEYS
        return {**env, **self.extra_env}

    def process_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
        return {**env, **self.hub_env(), "PYTHONUNBUFFERED": "1"}

    # ---- starting ----
    def start(self, progress: Callable[[str], None] = lambda name: None) -> None:
        self.start_services(progress)
        self.start_hub(progress)

    def start_services(self, progress: Callable[[str], None] = lambda name: None) -> None:
        """PostgreSQL (a fresh database), Redis, the S3 server and its bucket."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.web_ports = tuple(port or free_port() for port in self.web_ports)
        self._create_database()
        progress(f"PostgreSQL database {self.database}")
        if not self.redis_url:
            self.redis_port = free_port()
            self._add("redis", self._redis_command()).start()
            self.wait_redis()
        progress(f"Redis {self.queue_url}")
        moto_port = free_port()
        self.s3_url = f"http://127.0.0.1:{moto_port}"
        moto = self._add("s3", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(moto_port)])
        moto.start()
        wait(
            "the S3 server", lambda: self.s3_client(self.s3_url).create_bucket(Bucket=BUCKET) is not None, 120, moto.log
        )
        progress(f"S3 (moto) {self.s3_url}, bucket {BUCKET}")

    def start_hub(self, progress: Callable[[str], None] = lambda name: None) -> None:
        """Migrate once, then the workers and the web processes."""
        migrate = [sys.executable, "-c", "from hub.migrate import upgrade; upgrade()"]
        done = subprocess.run(migrate, env=self.process_env(), capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise ClusterError(f"migrating {self.database} failed:\n{done.stderr[-2000:]}")
        progress("schema migrated")
        # All at once (each takes seconds to import), then each waited for.
        self.start_workers(range(1, self.workers + 1), progress)
        webs = []
        for number, url in enumerate(self.web_urls, start=1):
            port = url.rsplit(":", 1)[1]
            command = [str(BIN / "chateval"), "serve", "--host", "127.0.0.1", "--port", port, "--no-embedded-worker"]
            webs.append((self._add(f"web-{number}", command), url))
            webs[-1][0].start()
        for web, url in webs:
            wait(web.name, functools.partial(http_ok, f"{url}/static/app.css"), 300, web.log)
            progress(f"{web.name} {url}")
        self.save()

    def start_workers(self, numbers, progress: Callable[[str], None] = lambda name: None) -> list[Part]:
        """Start `worker-N` for each N and wait until each listens on the queue (one more blocking pop in Redis)."""
        listening = self.queue_listeners()
        workers = [self._add(f"worker-{number}", [str(BIN / "chateval"), "worker"]) for number in numbers]
        for worker in workers:
            worker.start()

        def listening_at_least(count: int) -> bool:
            return all(w.alive() for w in workers) and self.queue_listeners() >= listening + count

        for count, worker in enumerate(workers, start=1):
            wait(worker.name, functools.partial(listening_at_least, count), 300, worker.log)
            progress(worker.name)
        self.save()
        return workers

    def _add(self, name: str, command: list[str]) -> Part:
        self.parts[name] = Part(name, command, self.process_env(), self.root / "logs" / f"{name}.log")
        return self.parts[name]

    def _redis_command(self) -> list[str]:
        folder = self.root / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        # Append-only file, synced on every write: a restart keeps every job that was queued.
        options = ["--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""]
        return [
            shutil.which("redis-server") or "redis-server",
            *options,
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ]

    def _create_database(self) -> None:
        import sqlalchemy as sa

        self.database = f"chateval_cluster_{secrets.token_hex(6)}"
        admin = sa.create_engine(self.postgres_admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as connection:
                connection.execute(sa.text(f'CREATE DATABASE "{self.database}"'))
        except sa.exc.OperationalError as exc:
            raise ClusterError(f"PostgreSQL not reachable at {self.postgres_admin_url}: {exc.orig}") from exc
        finally:
            admin.dispose()

    # ---- health and faults ----
    def redis(self):
        import redis

        return redis.Redis.from_url(self.queue_url, socket_connect_timeout=2, socket_timeout=5)

    def wait_redis(self) -> None:
        wait("Redis", lambda: self.redis().ping(), 30, self.parts["redis"].log if "redis" in self.parts else None)

    def queue_listeners(self) -> int:
        """Connections whose last command was a blocking pop: each waiting worker thread holds one."""
        try:
            return sum(1 for client in self.redis().client_list() if client.get("cmd") == "brpop")
        except Exception:
            return 0

    def restart(self, name: str) -> None:
        """Stop a part gracefully and start it again with the same command (Redis: same port, same data)."""
        part = self.parts[name]
        part.stop()
        part.start()
        if name == "redis":
            self.wait_redis()
        self.save()

    @staticmethod
    def s3_client(endpoint: str):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="cluster",
            aws_secret_access_key="cluster",
            region_name="us-east-1",
        )

    # ---- stopping ----
    def stop(self) -> None:
        """Every process (webs first, Redis and S3 last), then the database."""
        for name in sorted(self.parts, key=lambda n: ("web" not in n, "worker" not in n)):
            self.parts[name].stop()
        if self.database:
            import sqlalchemy as sa

            admin = sa.create_engine(self.postgres_admin_url, isolation_level="AUTOCOMMIT")
            with admin.connect() as connection:
                connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'))
            admin.dispose()
            self.database = ""
        (self.root / STATE).unlink(missing_ok=True)

    # ---- the state file `stop` reads ----
    def save(self) -> None:
        state = {
            "database": self.database,
            "postgres_admin_url": self.postgres_admin_url,
            "web_urls": self.web_urls,
            "s3_url": self.s3_url,
            "queue_url": self.queue_url,
            "parts": [part.state() for part in self.parts.values()],
        }
        (self.root / STATE).write_text(json.dumps(state, indent=2) + "\n")
        env = "".join(f"{key}={value}\n" for key, value in self.hub_env().items())
        (self.root / "cluster.env").write_text(env)
        (self.root / "cluster.env").chmod(0o600)  # holds the secret key

    @classmethod
    def load(cls, root: Path) -> Cluster:
        state = json.loads((root / STATE).read_text())
        cluster = cls(root, postgres_admin_url=state["postgres_admin_url"], database=state["database"])
        for saved in state["parts"]:
            part = Part(
                saved["name"], saved["command"], {}, Path(saved["log"]), pid=saved["pid"], started=saved["started"]
            )
            cluster.parts[part.name] = part
        return cluster

    def describe(self) -> str:
        lines = [f"web-{i}: {url}" for i, url in enumerate(self.web_urls, start=1)]
        lines += [
            f"S3 (moto): {self.s3_url} bucket {BUCKET}",
            f"Redis: {self.queue_url}",
            f"PostgreSQL: {self.database_url}",
            f"logs: {self.root / 'logs'}",
            f"settings: set -a; . {self.root / 'cluster.env'}; set +a   # then e.g. chateval admin create-user ...",
        ]
        return "\n".join(lines)
