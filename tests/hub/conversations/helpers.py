"""Conversation logs for the hub's conversation-set tests, the values the shipped function metrics must give on
them computed on their own (not with the toolkit), and polling the real job to its end."""

from __future__ import annotations

import json
import random
import statistics
import time
from typing import Any

from tests.hub.conftest import auth

WORDS = ("alpha", "beta", "gamma", "delta", "echo", "fox", "golf", "hotel", "india", "juliet")


def conversation_lines(count: int = 12, seed: int = 3) -> list[dict[str, Any]]:
    """`count` conversations from two system labels: a system message, then 1-4 user/assistant exchanges of random
    words, some turns ending with a question mark."""
    rng = random.Random(seed)
    records = []
    for c in range(count):
        messages = [{"role": "system", "content": "Be helpful."}]
        for _ in range(rng.randint(1, 4)):
            for role in ("user", "assistant"):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
                messages.append({"role": role, "content": text + ("?" if rng.random() < 0.4 else ".")})
        records.append({"id": f"c{c}", "system": "bot-a" if c % 2 else "bot-b", "messages": messages})
    return records


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def expected_turn_values(text: str) -> dict[str, float]:
    """length.words, length.chars and is-question for the texts above (words and a final . or ?)."""
    return {"length.words": len(text.split()), "length.chars": len(text), "is-question": float(text.endswith("?"))}


def expected_aggregates(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, float]]:
    """(system, role, value) -> n and mean of the three values above over user and assistant turns, and of
    turns.all / turns.user / turns.assistant over conversations (role "conversation")."""
    samples: dict[tuple[str, str, str], list[float]] = {}
    for record in records:
        for message in record["messages"]:
            if message["role"] in ("user", "assistant"):
                for name, value in expected_turn_values(message["content"]).items():
                    samples.setdefault((record["system"], message["role"], name), []).append(value)
        roles = [m["role"] for m in record["messages"]]
        whole = {
            "turns.all": len(roles),
            "turns.user": roles.count("user"),
            "turns.assistant": roles.count("assistant"),
        }
        for name, value in whole.items():
            samples.setdefault((record["system"], "conversation", name), []).append(value)
    return {
        key: {
            "n": len(values),
            "mean": statistics.fmean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else None,
        }
        for key, values in samples.items()
    }


def upload(
    client, token: str | None, content: bytes, *, name: str = "Support logs", filename: str = "logs.jsonl", **data
):
    files = {"conversations": (filename, content, "application/x-ndjson")}
    return client.post(
        "/api/conversation-sets", headers=auth(token) if token else {}, data={"name": name, **data}, files=files
    )


def wait_evaluated(client, token: str, set_id: int, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/conversation-sets/{set_id}", headers=auth(token)).json()
        if body["status"] in ("evaluated", "failed") or time.monotonic() > deadline:
            return body
        time.sleep(0.2)
