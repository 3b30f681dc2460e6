"""Benchmark: LLM judge throughput of evaluation.llm.ChatClient against a local endpoint, beside plain aiohttp.

Throughput section: `chateval judge-server --latency-ms 50` runs as its own process (so its CPU is not the
client's); N judge calls (default 2,000, cache off) go through the real ChatClient with 16 requests in flight,
and, in the same run, through a trivial reference: a plain aiohttp session (ChatClient's HTTP stack) with the same
concurrency, no retries, no cache, no parsing beyond .json(); `--httpx` adds a plain httpx.AsyncClient. Each is
run --repeats times, alternating, and the best run of each is shown, with each side's CPU time per call (this
process for the client, /proc for the server process).

  judgements/s                 N / wall
  ideal wall                   N x latency / concurrency (every slot busy, zero overhead)
  overhead per call            (wall - ideal) / N                     (amortised over the slots)
  overhead per request slot    (wall - ideal) x concurrency / N       (extra time one request holds a slot,
                                                                       compared with the 50 ms latency)

Usage: python scripts/bench_judges.py [--calls N] [--concurrency C] [--latency-ms L] [--repeats R]
Targets (issue 10): >= 150 judgements/s with 16 concurrent requests at 50 ms latency, and the client's overhead
under 10% of the latency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
from bench_ppi import active_section, ppi_section  # the PPI simulation tables (scripts/bench_ppi.py)

from evaluation.llm.client import ChatClient
from evaluation.llm.config import EndpointConfig

CHATEVAL = str(Path(sys.executable).parent / "chateval")
PLAIN = "plain aiohttp (reference)"
JUDGE_PROMPT = (
    "You are judging two replies to a conversation. Conversation: {context}\n"
    "Reply A: {a}\nReply B: {b}\nWhich reply is better? Answer 'A', 'B' or 'tie'."
)


@dataclass
class Run:
    name: str
    calls: int
    wall_s: float
    cpu_s: float = 0.0  # this process's CPU time during the run (the client's)
    server_cpu_s: float = 0.0  # the server process's CPU time during the run


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (Linux); 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(runner, server: subprocess.Popen, *args) -> Run:
    cpu, server_cpu = time.process_time(), process_cpu_s(server.pid)
    run = runner(*args)
    run.cpu_s, run.server_cpu_s = time.process_time() - cpu, process_cpu_s(server.pid) - server_cpu
    return run


def judge_requests(count: int) -> list[list[dict[str, str]]]:
    return [
        [
            {
                "role": "user",
                "content": JUDGE_PROMPT.format(
                    context=f"User: tell me about item {i}.", a=f"Item {i} is fine.", b=f"I like item {i} a lot."
                ),
            }
        ]
        for i in range(count)
    ]


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    command = [CHATEVAL, "judge-server", "--port", "0", "--latency-ms", str(latency_ms)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    line = process.stdout.readline() if process.stdout else ""
    found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
    if not found:
        process.kill()
        raise SystemExit(f"judge-server did not start: {line!r} {process.communicate()[1][-2000:]}")
    return process, found.group(1)


def run_client(base_url: str, requests: list, concurrency: int) -> Run:
    config = EndpointConfig(base_url=base_url, model="judge", concurrency=concurrency, max_tokens=8)
    client = ChatClient(config, cache=None)
    start = time.perf_counter()
    results = client.complete_many(requests)
    wall = time.perf_counter() - start
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise SystemExit(f"ChatClient: {len(failed)} call(s) failed, first: {failed[0]}")
    return Run("ChatClient", len(requests), wall)


def run_plain_aiohttp(base_url: str, requests: list, concurrency: int) -> Run:
    """The same HTTP stack as ChatClient with nothing else: no retries, cache, accounting or validation."""

    async def main() -> float:
        semaphore = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def one(messages: list) -> None:
                async with semaphore:
                    body = {"model": "judge", "messages": messages, "temperature": 0.0, "max_tokens": 8}
                    async with http.post(base_url + "/chat/completions", json=body) as response:
                        response.raise_for_status()
                        (await response.json())["choices"][0]["message"]["content"]

            start = time.perf_counter()
            await asyncio.gather(*(one(m) for m in requests))
            return time.perf_counter() - start

    return Run(PLAIN, len(requests), asyncio.run(main()))


def run_plain_httpx(base_url: str, requests: list, concurrency: int) -> Run:
    """httpx's async client, the other common choice (what ChatClient used first): shown for comparison."""

    async def main() -> float:
        semaphore = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as http:

            async def one(messages: list) -> None:
                async with semaphore:
                    body = {"model": "judge", "messages": messages, "temperature": 0.0, "max_tokens": 8}
                    response = await http.post(base_url + "/chat/completions", json=body)
                    response.raise_for_status()
                    response.json()["choices"][0]["message"]["content"]

            start = time.perf_counter()
            await asyncio.gather(*(one(m) for m in requests))
            return time.perf_counter() - start

    return Run("plain httpx", len(requests), asyncio.run(main()))


def throughput_section(args: argparse.Namespace) -> None:
    latency = args.latency_ms / 1000
    requests = judge_requests(args.calls)
    server, base_url = start_server(args.latency_ms)
    try:
        run_client(base_url, requests[:200], args.concurrency)  # warm-up: imports, connections
        run_plain_aiohttp(base_url, requests[:200], args.concurrency)
        best: dict[str, Run] = {}
        runners = [run_plain_aiohttp, run_client] + ([run_plain_httpx] if args.httpx else [])
        for _ in range(args.repeats):
            for runner in runners:
                run = timed(runner, server, base_url, requests, args.concurrency)
                if run.name not in best or run.wall_s < best[run.name].wall_s:
                    best[run.name] = run
    finally:
        server.terminate()
        server.communicate(timeout=30)
    ideal = args.calls * latency / args.concurrency
    print(
        f"\n## Judge throughput: {args.calls:,} calls, {args.concurrency} in flight, {args.latency_ms:g} ms latency, "
        f"cache off (best of {args.repeats}; ideal {args.calls / ideal:,.0f}/s)"
    )
    print(
        f"{'client':<26}{'wall s':>9}{'judgements/s':>14}{'per call ms':>13}{'per slot ms':>13}{'% latency':>11}"
        f"{'client CPU ms/call':>20}{'server CPU ms/call':>20}"
    )
    for run in best.values():
        per_call = (run.wall_s - ideal) / run.calls
        per_slot = per_call * args.concurrency
        print(
            f"{run.name:<26}{run.wall_s:>9.2f}{run.calls / run.wall_s:>14.1f}{per_call * 1000:>13.3f}"
            f"{per_slot * 1000:>13.2f}{per_slot / latency * 100:>10.1f}%"
            f"{run.cpu_s / run.calls * 1000:>20.3f}{run.server_cpu_s / run.calls * 1000:>20.3f}"
        )
    client, plain = best["ChatClient"], best[PLAIN]
    print(
        f"ChatClient / plain aiohttp: throughput ratio {plain.wall_s / client.wall_s:.3f}, "
        f"client CPU per call ratio {client.cpu_s / max(plain.cpu_s, 1e-9):.3f}"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPU(s)")
    rate = client.calls / client.wall_s
    per_call = (client.wall_s - ideal) / client.calls / latency
    per_slot = per_call * args.concurrency
    own = (client.wall_s - plain.wall_s) * args.concurrency / client.calls / latency
    print(
        f"targets: >= 150 judgements/s: {'met' if rate >= 150 else 'NOT met'} ({rate:.0f}/s); "
        f"overhead (wall - ideal) / calls < 10% of latency: {'met' if per_call < 0.10 else 'NOT met'} "
        f"({per_call * 100:.1f}%)"
    )
    print(
        f"stricter, per request slot: {per_slot * 100:.1f}% of latency, of which the plain reference on the same "
        f"server and machine has {(per_slot - own) * 100:.1f}% and ChatClient's own work {own * 100:.1f}%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--httpx", action="store_true", help="Also time plain httpx (slow: ~10x the CPU per call).")
    args = parser.parse_args()
    if not 1 <= args.calls <= 1_000_000 or not 1 <= args.concurrency <= 512 or not 0 < args.latency_ms <= 10_000:
        parser.error("--calls 1..1,000,000, --concurrency 1..512, --latency-ms in (0, 10000]")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPU(s)")
    throughput_section(args)
    ppi_section()
    active_section()


if __name__ == "__main__":
    main()
