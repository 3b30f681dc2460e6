"""`chateval datasets fetch` as a real process: network failures exit 8 with what failed (never 5, "a metric cannot
run"), a local mirror folder without the file exits 4, and nothing is installed either way."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

CHATEVAL = Path(sys.executable).with_name("chateval")


def fetch(home: Path, *args: str | Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CHATEVAL_HOME": str(home)}
    command = [str(CHATEVAL), "datasets", "fetch", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def one_line(text: str) -> str:
    return " ".join(text.split())


def installed(home: Path) -> list[str]:
    folder = home / "datasets"
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.exists() else []


def dead_port() -> int:
    """A port nothing listens on (bound, then closed): connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Misbehaving(BaseHTTPRequestHandler):
    """`/500/...` answers a server error; `/cut/...` promises 1 MB and hangs up after 10 bytes."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/500/"):
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 20))
        self.end_headers()
        self.wfile.write(b"0123456789")
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_unreachable_server_exits_8(tmp_path):
    port = dead_port()
    result = fetch(tmp_path, "ncm", "--mirror", f"http://127.0.0.1:{port}/")
    assert result.returncode == 8, result.stderr
    assert one_line(result.stderr).startswith(f"error: could not download http://127.0.0.1:{port}/")
    assert "Connection refused" in result.stderr and installed(tmp_path) == []


def test_server_error_exits_8(tmp_path, server):
    result = fetch(tmp_path, "dbdc", "--mirror", f"{server}/500")
    assert result.returncode == 8, result.stderr
    assert "HTTP Error 500" in one_line(result.stderr) and installed(tmp_path) == []


def test_connection_cut_mid_file_exits_8(tmp_path, server):
    result = fetch(tmp_path, "os", "--mirror", f"{server}/cut")
    assert result.returncode == 8, result.stderr
    assert one_line(result.stderr).startswith(f"error: download of {server}/cut/")
    assert "broke off" in result.stderr and installed(tmp_path) == []


def test_local_folder_without_the_file_exits_4(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = fetch(tmp_path / "home", "twitter", "--mirror", empty)
    assert result.returncode == 4, result.stderr
    assert one_line(result.stderr).startswith(f"error: could not read {empty.resolve().as_uri()}/")
    assert installed(tmp_path / "home") == []
