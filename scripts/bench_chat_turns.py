"""Benchmark: conversation turns through the hub against the local endpoint server, streamed and not.

A fresh data folder (SQLite) with a study of one system behind `evaluation/llm/server.py` (each reply `--words`
words, the server adding `--latency` seconds before answering), served by uvicorn on 127.0.0.1; `--participants`
participants (asyncio + httpx) each hold one conversation and send `--turns` messages one after another, half of
them streamed (`Accept: text/event-stream`). Reported per kind: turns per second over all participants, time to the
first word (streamed) and to the whole reply, p50 and p95; and the same call straight to the endpoint (no hub) as
the reference. Every reply is checked to be the endpoint's text. Nothing is asserted: figures for the note.

Usage: python scripts/bench_chat_turns.py [--participants 8] [--turns 10] [--words 200] [--latency 0.0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"


async def _participant(base: str, token: str, study_id: int, turns: int, words: int, results: dict) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        joined = (await client.post(f"/api/study-invites/{token}/join")).raise_for_status().json()
        client.headers["X-CSRF-Token"] = joined["csrf_token"]
        chat = (await client.post(f"/api/studies/{study_id}/conversations", json={})).json()
        url = f"/api/conversations/{chat['id']}/messages"
        for turn in range(turns):
            started = time.perf_counter()
            if turn % 2:
                first = None
                text = []
                async with client.stream("POST", url, json={"content": f"turn {turn}"}, params={"stream": 1}) as reply:
                    async for line in reply.aiter_lines():
                        if line.startswith("event: delta") and first is None:
                            first = time.perf_counter() - started
                        if line.startswith("data: ") and '"text"' in line:
                            text.append(line)
                results["stream_first"].append(first or 0.0)
                results["stream_whole"].append(time.perf_counter() - started)
                assert len(text) == words, len(text)
            else:
                reply = await client.post(url, json={"content": f"turn {turn}"})
                assert reply.status_code == 201 and len(reply.json()["message"]["content"].split()) == words
                results["json_whole"].append(time.perf_counter() - started)


async def _direct(base_url: str, n: int, results: dict) -> None:
    from evaluation.llm.config import EndpointConfig
    from evaluation.llm.streaming import collect

    config = EndpointConfig(base_url=base_url, model="m", timeout_s=60)
    for _ in range(n):
        started = time.perf_counter()
        await collect(config, [{"role": "user", "content": "hello"}])
        results["direct_whole"].append(time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--participants", type=int, default=8)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    os.environ["HUB_DATA_DIR"] = tempfile.mkdtemp(prefix="bench-chat-")
    os.environ["HUB_NEW_RATERS_PER_CLIENT"] = "10000/minute"  # every simulated participant comes from 127.0.0.1
    for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        os.environ.pop(name, None)

    from sqlmodel import Session

    from evaluation.llm.server import LocalChatServer
    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.services.accounts.accounts import create_user
    from hub.services.studies import participants, studies
    from tests.hub.live_server import live_hub

    upgrade()
    reply = " ".join(f"word{i}" for i in range(args.words))
    with LocalChatServer(responder=lambda _request: reply, latency_s=args.latency) as endpoint:
        with Session(get_engine()) as session:
            admin = create_user(session, email="a@example.org", password="x" * 12, display_name="a", is_admin=True)
            body = {
                "title": "bench",
                "systems": [{"label": "local", "base_url": endpoint.base_url, "model": "m", "max_tokens": 4096}],
                "schema": {"questions": [{"id": "ok", "kind": "binary", "question": "OK?"}]},
                "max_participants": args.participants,
            }
            study = studies.create_study(session, admin, body)
            _, token = participants.create_invite(session, admin, study, max_participants=args.participants)
            study_id = study.id
        results: dict[str, list[float]] = {
            k: [] for k in ("json_whole", "stream_first", "stream_whole", "direct_whole")
        }
        with live_hub() as (host, port):
            base = f"http://{host}:{port}"
            started = time.perf_counter()

            async def everyone() -> None:
                await asyncio.gather(
                    *(
                        _participant(base, token, study_id or 0, args.turns, args.words, results)
                        for _ in range(args.participants)
                    )
                )

            asyncio.run(everyone())
            elapsed = time.perf_counter() - started
        asyncio.run(_direct(endpoint.base_url, max(10, args.turns), results))
    total = args.participants * args.turns
    print(
        f"{total} turns by {args.participants} participants in {elapsed:.1f} s: {total / elapsed:.1f} turns/s "
        f"({args.words}-word replies, endpoint latency {args.latency:g} s)"
    )
    print(f"JSON reply, whole          {_percentiles(results['json_whole'])}")
    print(f"streamed, first word       {_percentiles(results['stream_first'])}")
    print(f"streamed, whole            {_percentiles(results['stream_whole'])}")
    print(f"endpoint alone, streamed   {_percentiles(results['direct_whole'])}")


if __name__ == "__main__":
    main()
