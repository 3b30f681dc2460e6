"""A real uvicorn server on 127.0.0.1 in a background thread, for tests about real sockets (slow or stalled
clients), and clients that never read what they asked for."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from hub.web.app import create_app


@contextmanager
def live_hub(send_buffer: int | None = 65536) -> Iterator[tuple[str, int]]:
    """The hub (create_app, with the current HUB_* settings) served by uvicorn; yields (host, port).

    `send_buffer`: SO_SNDBUF of the listening socket, which the accepted connections inherit (None: the kernel's
    autotuning, up to net.ipv4.tcp_wmem's 4 MB per connection). A fixed 64 KB lets a 1 MB answer overflow the
    server's buffers as a many-MB answer overflows autotuned ones, without making 40 clients cost gigabytes."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer is not None:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(create_app(), log_level="warning", timeout_graceful_shutdown=2, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


def stalled_readers(
    host: str, port: int, path: str, count: int, *, pipelined: int = 2, receive_buffer: int = 4096
) -> list[socket.socket]:
    """`count` raw clients that send `GET path` `pipelined` times on one connection (HTTP/1.1 keep-alive), with a
    small receive buffer, and then never read. Pipelining matters for pages: uvicorn hands a whole page body to its
    write buffer at once, so the first answer never waits; the second one waits to start until the first has
    drained, after its route ran, which is where a request-scoped session would still be open."""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/html\r\n\r\n".encode() * pipelined
    sockets = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)  # before connect: sets the window
        sock.connect((host, port))
        sock.sendall(request)
        sockets.append(sock)
    return sockets


def wait_until_answering(sockets: list[socket.socket], timeout: float) -> int:
    """How many of `sockets` have started receiving an answer within `timeout` (peeked, never read)."""
    deadline = time.monotonic() + timeout
    answered = 0
    for sock in sockets:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock.settimeout(remaining)
        try:
            if sock.recv(1, socket.MSG_PEEK):
                answered += 1
        except TimeoutError:
            break
    return answered
