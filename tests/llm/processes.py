"""Child processes that a test interrupts with Ctrl-C (SIGINT)."""

from __future__ import annotations

import signal


def ctrl_c_reaches_child() -> None:
    """`preexec_fn` for a child the test stops with SIGINT, as a terminal's Ctrl-C would. A shell without job control
    starts background jobs with SIGINT ignored, and the children inherit that: Python then installs no
    KeyboardInterrupt handler and the signal does nothing. A test suite run as such a job (`make test &`, a CI runner)
    would otherwise see the command run to its end or never stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
