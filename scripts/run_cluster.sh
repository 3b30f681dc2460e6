#!/usr/bin/env bash
# The many-machine topology from local processes (no Docker engine needed): a fresh PostgreSQL database on this
# machine's server, Redis, moto's S3-compatible server, two `chateval worker`s and two web processes.
#
#   scripts/run_cluster.sh up [--web-ports 8001,8002] [--workers 2] [--dir DIR]   # foreground; Ctrl-C cleans up
#   scripts/run_cluster.sh start [...]     # the same, left running in the background (state in --dir)
#   scripts/run_cluster.sh status|stop [--dir DIR]
#
# PostgreSQL: HUB_CLUSTER_POSTGRES_URL (default postgresql+psycopg2://postgres@127.0.0.1:5432/postgres) names the
# server's admin database, in which a database is made per run and dropped by stop.
# The work is in scripts/local_cluster.py; its command line is scripts/cluster_cli.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
if [[ ! -x "$PYTHON" ]]; then
    echo "no $PYTHON: run 'make install-test' first (moto's server is a test extra)" >&2
    exit 2
fi
command="${1:-up}"
shift || true
# exec: Ctrl-C and SIGTERM reach the Python helper, whose handler stops every process and drops the database.
exec "$PYTHON" scripts/cluster_cli.py "$command" "$@"
