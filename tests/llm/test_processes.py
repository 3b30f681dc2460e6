"""tests/llm/processes.py: a child a test starts is gone when its block ends, however the block ends."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.llm.processes import child_process, first_line

# Says it is ready, then sleeps; with "stubborn" it ignores SIGINT and SIGTERM (only SIGKILL stops it).
CHILD = """
import signal, sys, time
if sys.argv[1:] == ["stubborn"]:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""


def test_a_child_deaf_to_sigint_and_sigterm_is_killed_when_the_wait_times_out():
    command = [sys.executable, "-c", CHILD, "stubborn"]
    with (
        pytest.raises(subprocess.TimeoutExpired),
        child_process(command, grace_s=0.5, stdout=subprocess.PIPE, text=True) as process,
    ):
        assert first_line(process) == "ready\n"
        process.send_signal(signal.SIGINT)  # ignored, as when a background job's children inherit SIG_IGN
        process.wait(timeout=0.5)
    assert process.returncode == -signal.SIGKILL
    assert process.stdout.closed


def test_a_child_left_running_by_a_failed_assertion_is_terminated():
    with (
        pytest.raises(AssertionError, match="a step of the test failed"),
        child_process([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True) as process,
    ):
        assert first_line(process) == "ready\n"
        raise AssertionError("a step of the test failed")
    assert process.returncode == -signal.SIGTERM


def test_a_child_that_writes_nothing_fails_the_test_instead_of_hanging_it():
    with (
        child_process([sys.executable, "-c", "import time; time.sleep(600)"], stdout=subprocess.PIPE) as process,
        pytest.raises(AssertionError, match="wrote nothing within 0 s"),
    ):
        first_line(process, limit_s=0.2)
    assert process.returncode == -signal.SIGTERM
