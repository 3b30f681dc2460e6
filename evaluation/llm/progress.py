"""A rich progress bar on stderr for endpoint calls (the library's own, so it needs nothing from the CLI)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextmanager
def call_progress(label: str | None, total: int, *, completed: int = 0) -> Iterator[Callable[[], None]]:
    """Yields `advance()`; draws a bar on stderr only when a label is given."""
    if label is None:
        yield lambda: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=completed + total, completed=completed)
        yield lambda: bar.advance(task)
