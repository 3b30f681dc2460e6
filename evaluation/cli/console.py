"""Terminal output shared by CLI commands: stdout for results, stderr for progress and errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # error lines stay whole, whatever the terminal width


@contextmanager
def metric_progress(enabled: bool) -> Iterator:
    """A progress bar per metric; yields a callback `(metric_name, done, total)`."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("{task.description:<18}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        tasks: dict[str, TaskID] = {}

        def update(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = progress.add_task(name, total=total)
            progress.update(tasks[name], completed=done, total=total)

        yield update
