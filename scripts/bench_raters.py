"""The simulated raters of scripts/bench_ratings.py: each loops claim -> submit over HTTP against a running hub
server for a phase (optionally with the server killed and restarted half-way), recording what the server
acknowledged, the latencies and errors, and (on PostgreSQL) the states of the server's database connections.
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
from bench_servers import Server

RETRY_AFTER_CAP_S = 5.0  # the longest a rater honours a reply's Retry-After
RETRY_DEFAULT_S = 0.1  # the pause before sending again when a reply names no Retry-After
ITEMS_PER_TASK_GUESS = 12  # 10 pairs + 1 attention check + 1 repeat, for sizing only


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
