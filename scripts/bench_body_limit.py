"""Benchmark: the server's memory while a client sends a huge upload to POST /api/submissions.

Starts the hub with uvicorn in a subprocess (SQLite, default limits: max_upload_bytes x files per submission),
then, as a researcher, sends a large body (default 800 MB) twice: once with its Content-Length declared and once
chunked (no length), both generated on the fly. Reports the status, how many bytes were sent before the server
answered, the seconds taken and the server's peak RSS (VmHWM) before and after. Also sends the same body to
`/signup` anonymously. Target (reported, not asserted): peak RSS grows by less than 50 MB.

Usage: python scripts/bench_body_limit.py [--mb 800]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHUNK = b"word " * 13_107 + b"\n"  # 64 KiB


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def token(env: dict[str, str]) -> str:
    code = """
from sqlmodel import Session
from hub import db
from hub.migrate import upgrade
from hub.services.accounts.accounts import create_token, create_user
upgrade()
with Session(db.get_engine()) as session:
    user = create_user(session, email="r@example.org", password="correct horse battery", display_name="r")
    print(create_token(session, user, name="bench")[1])
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def send(port: int, path: str, megabytes: int, headers: dict[str, str], *, declared: bool) -> tuple[int, int, float]:
    """Stream `megabytes` of multipart body; returns (status, bytes sent before the answer, seconds)."""
    boundary = "benchboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="responses[hub-open-v1]"; filename="r.txt"\r\n\r\n'
    ).encode()
    chunks = megabytes * 16
    tail = f"\r\n--{boundary}--\r\n".encode()
    total = len(head) + chunks * len(CHUNK) + len(tail)
    request = f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
    request += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request += f"Content-Length: {total}\r\n\r\n" if declared else "Transfer-Encoding: chunked\r\n\r\n"
    sent = 0
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(request.encode())
        try:
            for part in [head, *([CHUNK] * chunks), tail]:
                sock.sendall(part if declared else f"{len(part):x}\r\n".encode() + part + b"\r\n")
                sent += len(part)
            if not declared:
                sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed the connection
            pass
        answer = sock.recv(65536).decode("latin-1")
    status = int(answer.split(" ", 2)[1]) if answer else 0
    return status, sent, time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=800)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="hub-bench-body-"))
    env = {**os.environ, "HUB_DATA_DIR": str(scratch)}
    for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        env.pop(name, None)
    bearer = token(env)
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "--factory", "hub.web.app:create_app", "--port", str(port)]
    server = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/datasets", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        results = []
        for path, headers in (("/api/submissions", {"Authorization": f"Bearer {bearer}"}), ("/signup", {})):
            for declared in (True, False):
                before = peak_rss_mb(server.pid)
                status, sent, seconds = send(port, path, args.mb, headers, declared=declared)
                after = peak_rss_mb(server.pid)
                results.append(
                    {
                        "path": path,
                        "length": "declared" if declared else "chunked",
                        "status": status,
                        "sent_mb": round(sent / 2**20, 1),
                        "seconds": round(seconds, 2),
                        "peak_rss_mb_before": round(before, 1),
                        "peak_rss_mb_after": round(after, 1),
                    }
                )
                print(json.dumps(results[-1]))
        stored = [p for p in (scratch / "files").rglob("*") if p.is_file()] if (scratch / "files").exists() else []
        print(f"files stored: {len(stored)}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
