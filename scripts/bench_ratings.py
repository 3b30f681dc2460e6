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
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench_raters import ITEMS_PER_TASK_GUESS, Ack, Phase, run_phase, sample_connections  # noqa: E402
from bench_ratings_integrity import INTEGRITY_CHECKS, integrity_problems, verify  # noqa: E402
from bench_servers import (  # noqa: E402
    Server,
    cpu_seconds,
    errors_in_log,
    free_port,
    fresh_database,
    server_environment,
    start_profiler,
    summarize_profile,
    use_environment,
)

DATASET = "hub-open-v1"
TARGET = 300.0
P99_TARGET_MS = 1000.0  # claims and submits in the steady phase
TASKS_PER_EXPERIMENT_GUESS = 12


# ---- the database ----------------------------------------------------------------------------------------


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
