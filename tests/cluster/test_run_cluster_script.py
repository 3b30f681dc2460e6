"""scripts/run_cluster.sh reaches its Python command line: status and stop without a running cluster say so (the
full start is exercised through the same Cluster class by test_cluster.py; a second start here would double the
time of the suite)."""

from __future__ import annotations

import subprocess

from local_cluster import REPO

SCRIPT = REPO / "scripts" / "run_cluster.sh"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_status_and_stop_without_a_cluster(tmp_path):
    status = run("status", "--dir", str(tmp_path))
    assert status.returncode == 1 and f"no cluster state in {tmp_path}" in status.stdout
    stop = run("stop", "--dir", str(tmp_path))
    assert stop.returncode == 0 and "no cluster state" in stop.stderr


def test_an_unknown_command_is_refused_with_usage():
    refused = run("explode")
    assert refused.returncode == 2 and "invalid choice: 'explode'" in refused.stderr
