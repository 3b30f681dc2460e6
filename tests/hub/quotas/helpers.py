"""Distinct valid response files, and the seconds to the next 00:00 UTC computed independently of the hub."""

from __future__ import annotations

import time

from evaluation.dataset import load_dataset
from tests.hub.conftest import DATASET, auth, responses_file


def valid_file(n: int) -> bytes:
    """A valid file that differs from every other n (so no upload is refused as a duplicate)."""
    lines = [p.references[0] for p in load_dataset(DATASET).prompts]
    lines[0] = f"{lines[0]} variant {n}"
    return responses_file(lines)


def invalid_file() -> bytes:
    return responses_file(["only one line"])  # too few lines: refused by validation (422)


def upload(client, token, content: bytes, name: str = "My bot"):
    files = {f"responses[{DATASET}]": ("mine.txt", content, "text/plain")}
    return client.post("/api/submissions", headers=auth(token), data={"name": name}, files=files)


def seconds_to_utc_midnight() -> float:
    now = time.time()
    return 86_400 - (now % 86_400)  # POSIX time has no leap seconds: every UTC day is 86,400 s


def next_midnight_words() -> str:
    return time.strftime("%Y-%m-%d 00:00 UTC", time.gmtime(time.time() + seconds_to_utc_midnight() + 1))
