"""The command line of scripts/run_cluster.sh: up (foreground, Ctrl-C cleans up), start, status, stop."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from local_cluster import DEFAULT_DIR, STATE, Cluster


def _start(args) -> Cluster:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    ports = tuple(int(p) for p in args.web_ports.split(","))
    cluster = Cluster(Path(args.dir), web_ports=ports, workers=args.workers, redis_url=args.redis_url)
    if (cluster.root / STATE).exists():
        sys.exit(
            f"a cluster's state is in {cluster.root / STATE}: `scripts/run_cluster.sh stop --dir {args.dir}` first"
        )
    steps = 4 + args.workers + len(ports)
    with Progress(TextColumn("{task.description}"), BarColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("starting", total=steps)
        try:
            cluster.start(lambda name: bar.update(task, advance=1, description=f"started {name}"))
        except BaseException:
            cluster.stop()
            raise
    print(cluster.describe(), flush=True)
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The many-machine topology from local processes.")
    parser.add_argument("command", choices=["up", "start", "stop", "status"])
    parser.add_argument("--dir", default=str(DEFAULT_DIR), help="state, logs and data of the cluster")
    parser.add_argument("--web-ports", default="8001,8002", help="ports of the web processes (0: any free port)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--redis-url", default="", help="use this Redis instead of starting one")
    args = parser.parse_args(argv)
    root = Path(args.dir)
    if args.command == "stop":
        if not (root / STATE).exists():
            print(f"no cluster state in {root}", file=sys.stderr)
            return 0
        Cluster.load(root).stop()
        print("stopped: every process ended, database dropped", file=sys.stderr)
        return 0
    if args.command == "status":
        if not (root / STATE).exists():
            print(f"no cluster state in {root}")
            return 1
        cluster = Cluster.load(root)
        for part in cluster.parts.values():
            print(f"{part.name:10} pid {part.pid:<8} {'running' if part.alive() else 'GONE'}")
        return 0 if all(part.alive() for part in cluster.parts.values()) else 1
    cluster = _start(args)
    if args.command == "start":
        return 0
    stopping = []

    def stop(signum, frame) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    print("running; Ctrl-C stops everything", file=sys.stderr, flush=True)
    try:
        while not stopping:
            gone = [name for name, part in cluster.parts.items() if not part.alive()]
            if gone:
                print(f"{', '.join(gone)} stopped on its own; see {root / 'logs'}", file=sys.stderr)
                return 1
            time.sleep(0.5)
    finally:
        cluster.stop()
        print("stopped: every process ended, database dropped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
