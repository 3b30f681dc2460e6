"""docker-compose.yml runs the topology scripts/local_cluster.py starts (no Docker engine here to run it): the same
parts, the same hub settings, the same commands; `docker compose config` (or the standalone `docker-compose config`)
validates it where either is installed."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from local_cluster import HUB_ENV_KEYS, REPO, Cluster

COMPOSE = REPO / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def hub_services(compose: dict, command: str) -> dict[str, dict]:
    return {
        name: s
        for name, s in compose["services"].items()
        if s.get("command", [None, None])[:2] == ["chateval", command]
    }


def test_two_web_processes_two_workers_postgres_redis_and_s3(compose):
    services = compose["services"]
    webs, workers = hub_services(compose, "serve"), hub_services(compose, "worker")
    assert len(webs) == 2 and len(workers) == 2
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    assert services["s3"]["image"].startswith("motoserver/moto:")
    for service in {**webs, **workers, "migrate": services["migrate"], "s3-bucket": services["s3-bucket"]}.values():
        assert service["build"] == "." and (REPO / "Dockerfile").is_file()
    # Two services published on two ports (no proxy in front), as run_cluster.sh prints two URLs.
    assert sorted(port for web in webs.values() for port in web["ports"]) == ["8001:8000", "8002:8000"]


def test_every_hub_process_gets_the_settings_the_local_cluster_gives(compose, tmp_path):
    hub_env = compose["x-hub-env"]
    assert tuple(hub_env) == HUB_ENV_KEYS == tuple(Cluster(tmp_path, database="x").hub_env())
    for name, service in compose["services"].items():
        if service.get("build"):
            assert service["environment"] == hub_env, name
    # No published secret: compose refuses to start without one.
    assert hub_env["HUB_SECRET_KEY"].startswith("${HUB_SECRET_KEY:?")


def test_same_commands_as_the_local_cluster(compose, tmp_path):
    cluster = Cluster(tmp_path, database="x", web_ports=(1, 2))
    cluster.redis_port = 1
    local_redis = cluster._redis_command()
    redis_flags = compose["services"]["redis"]["command"]
    for flag in ("--appendonly", "--appendfsync"):  # a restart keeps the queued jobs in both
        assert redis_flags[redis_flags.index(flag) + 1] == local_redis[local_redis.index(flag) + 1]
    for web in hub_services(compose, "serve").values():
        assert "--no-embedded-worker" in web["command"]  # only the workers consume the queue


def _compose_cli() -> list[str] | None:
    """Docker's compose plugin, or else the standalone docker-compose (Debian's package): either validates the file
    without an engine."""
    if shutil.which("docker") and not subprocess.run(["docker", "compose", "version"], capture_output=True).returncode:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


@pytest.mark.skipif(_compose_cli() is None, reason="neither docker compose nor docker-compose is installed")
def test_docker_compose_accepts_the_file_and_refuses_to_start_without_a_secret():
    command = [*(_compose_cli() or []), "-f", str(COMPOSE), "config", "--quiet"]
    path = {"PATH": "/usr/bin:/bin:/usr/local/bin"}
    done = subprocess.run(command, env={**path, "HUB_SECRET_KEY": "test"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    refused = subprocess.run(command, env=path, capture_output=True, text=True)
    assert refused.returncode != 0 and "set HUB_SECRET_KEY" in refused.stderr
