"""Child processes that a test starts, interrupts with Ctrl-C (SIGINT) or kills, and must not leave running."""

from __future__ import annotations

import select
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def ctrl_c_reaches_child() -> None:
    """`preexec_fn` for a child the test stops with SIGINT, as a terminal's Ctrl-C would. A shell without job control
    starts background jobs with SIGINT ignored, and the children inherit that: Python then installs no
    KeyboardInterrupt handler and the signal does nothing. A test suite run as such a job (`make test &`, a CI runner)
    would otherwise see the command run to its end or never stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def child_process(command: list[str], *, grace_s: float = 10.0, **popen: Any) -> Iterator[subprocess.Popen]:
    """`subprocess.Popen(command, **popen)`, gone when the block ends however it ends (an assertion that failed, a
    wait that timed out, a SIGINT that did not stop it): a child still running gets SIGTERM, then SIGKILL if it is
    still there `grace_s` later, and is waited for; its pipes are closed."""
    process = subprocess.Popen(command, **popen)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def first_line(process: subprocess.Popen, limit_s: float = 60.0) -> str:
    """The first line the child writes to its stdout pipe, or an AssertionError if none comes within `limit_s`
    (instead of a test that waits for ever)."""
    ready, _, _ = select.select([process.stdout], [], [], limit_s)
    assert ready, f"the child wrote nothing within {limit_s:.0f} s (exit status {process.poll()})"
    return process.stdout.readline()
