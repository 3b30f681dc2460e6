"""`chateval irt`: refit the hub's IRT abilities, intervals and prompt discriminations from a ratings download."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from evaluation.cli.console import err, out
from evaluation.errors import InvalidInputError
from evaluation.irt.result import IrtReport, fit_report
from evaluation.judgements import Judgements
from evaluation.ratings_files import read_chateval_votes, read_ratings

SHOWN_PROMPTS = 5

app = typer.Typer(help="Item response theory over pairwise human judgements.", no_args_is_help=True)


class Correction(StrEnum):
    holm = "holm"
    bh = "bh"


def _load(ratings: Path, *, votes_csv: bool, runs: Path | None, dataset: str | None) -> Judgements:
    if votes_csv:
        judgements = read_chateval_votes(ratings, runs)
    else:
        # One dataset's fit labels prompts by their bare ids, as the hub's fit does.
        judgements = read_ratings(ratings, qualify_prompts=False if dataset is not None else None)
    if dataset is not None:
        return judgements.for_dataset(dataset)
    names = [name for name in judgements.datasets if name]
    if len(names) > 1:
        raise InvalidInputError(
            f"the file holds several datasets ({', '.join(names)}); choose one with --dataset", path=ratings
        )
    return judgements


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[Callable[[float], None] | None]:
    """A bootstrap progress bar on stderr; yields its update callback (None when disabled)."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("bootstrap"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task("bootstrap", total=1.0)
        yield lambda done: bar.update(task, completed=done)


@app.command("fit")
def fit_command(
    ratings: Annotated[Path, typer.Option(help="Ratings file: the hub's export (JSONL or CSV) or a minimal file.")],
    votes_csv: Annotated[bool, typer.Option("--votes-csv", help="RATINGS is the original ChatEval votes.csv.")] = (
        False
    ),
    runs: Annotated[Path | None, typer.Option(help="ChatEval runs.csv to check --votes-csv against.")] = None,
    dataset: Annotated[str | None, typer.Option(help="Fit only this dataset's judgements.")] = None,
    anchor: Annotated[
        str | None,
        typer.Option(
            help="System whose ability is fixed at 0: its id (the hub's files carry ids), or a name only one system "
            "carries (default: most judged)."
        ),
    ] = None,
    bootstrap: Annotated[int, typer.Option(min=1, help="Prompt-level bootstrap replicates.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    rater_terms: Annotated[bool, typer.Option("--rater-terms", help="Fit a left bias and reliability per rater.")] = (
        False
    ),
    correction: Annotated[Correction, typer.Option(help="Multiple-comparison correction.")] = Correction.holm,
    level: Annotated[float, typer.Option(min=0.5, max=0.999, help="Interval level.")] = 0.95,
    out_path: Annotated[Path | None, typer.Option("--out", help="Write the JSON report here.")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Bootstrap progress bar.")] = True,
) -> None:
    """Fit abilities, prompt discriminations and a tie threshold; bootstrap intervals; test every pair."""
    judgements = _load(ratings, votes_csv=votes_csv, runs=runs, dataset=dataset)
    with _progress_bar(progress) as update:
        report = fit_report(
            judgements,
            anchor=anchor,
            bootstrap=bootstrap,
            seed=seed,
            rater_terms=rater_terms,
            correction=correction.value,
            level=level,
            progress=update,
        )
    document = report.to_json()
    _print_report(report, document)
    if out_path is not None:
        out_path.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        out.print(f"wrote {out_path}", highlight=False)


def _anchor_label(document: dict[str, Any]) -> str:
    anchor_id = document["anchor_id"]
    return document["anchor"] if anchor_id is None else f"{document['anchor']} (#{anchor_id})"


def _print_report(report: IrtReport, document: dict[str, Any]) -> None:
    level = f"{report.level:.0%}"
    table = Table(
        title=f"IRT abilities ({document['n_judgements']:,} judgements, anchor {_anchor_label(document)} = 0, "
        f"{report.bootstrap.n_bootstrap} bootstrap replicates)"
    )
    for column, justify in (("system", "left"), ("ability", "right"), (f"{level} interval", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_column("rank", justify="right")
    table.add_column("tier", justify="right")
    for row in document["systems"]:
        low, high = row["interval"]
        best, worst = row["rank_interval"]
        ranks = str(best) if best == worst else f"{best}-{worst}"
        label = row["system"] if row["system_id"] is None else f"{row['system']} (#{row['system_id']})"
        table.add_row(label, f"{row['ability']:+.3f}", f"[{low:+.3f}, {high:+.3f}]", ranks, str(row["tier"]))
    out.print(table)
    out.print(
        f"tie threshold {document['tau']:.3f}; tie rate {document['tie_rate']:.1%} "
        f"({document['n_auto_ties']:,} automatic ties); {report.correction} correction across "
        f"{len(document['pairs'])} pairs, {sum(p['significant'] for p in document['pairs'])} significant",
        highlight=False,
    )
    for title, rows in (
        ("most discriminating prompts", document["most_discriminating"]),
        ("least discriminating prompts", document["least_discriminating"]),
    ):
        prompts = Table(title=title)
        prompts.add_column("prompt")
        prompts.add_column("discrimination", justify="right")
        prompts.add_column("judgements", justify="right")
        for row in rows[:SHOWN_PROMPTS]:
            prompts.add_row(row["prompt"], f"{row['discrimination']:.3f}", str(row["judgements"]))
        out.print(prompts)
