"""`chateval rank ppi`: a prediction-powered leaderboard from a human ratings file and a judge's ratings file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from evaluation.cli.console import err, out
from evaluation.errors import InvalidInputError
from evaluation.judgements import Judgements
from evaluation.ppi.items import Items, paired_items, select_judge
from evaluation.ppi.report import rank_report
from evaluation.ratings_files import read_ratings

app = typer.Typer(help="Leaderboards that combine judge votes with human votes.", no_args_is_help=True)


def _one_dataset(j: Judgements, dataset: str | None, path: Path) -> Judgements:
    names = [name for name in j.datasets if name]
    if dataset is not None and names:
        return j.for_dataset(dataset)
    if len(names) > 1:
        raise InvalidInputError(
            f"the file holds several datasets ({', '.join(names)}); choose one with --dataset", path=path
        )
    return j


def _anchor_index(items: Items, human: Judgements, anchor: str | None) -> int:
    if anchor is None:  # the system in the most human votes, as `chateval irt fit` does
        votes = np.bincount(items.pair_a[items.pair], items.human_votes, minlength=len(items.systems))
        votes += np.bincount(items.pair_b[items.pair], items.human_votes, minlength=len(items.systems))
        return int(np.argmax(votes))
    return items.systems.index(human.systems[human.find_system(anchor, role="anchor")])


@app.command("ppi")
def ppi_command(
    human_path: Annotated[Path, typer.Option("--human", help="Human ratings: the hub's ratings download (or CSV).")],
    judge_path: Annotated[
        Path, typer.Option("--judge", help="Judge ratings in the same shape; `rater` names the judge.")
    ],
    anchor: Annotated[
        str | None,
        typer.Option(
            help="System at ability 0: its id, or a name only one system carries (default: most human votes)."
        ),
    ] = None,
    level: Annotated[float, typer.Option(min=0.5, max=0.999, help="Interval level.")] = 0.95,
    dataset: Annotated[str | None, typer.Option(help="Use only this dataset's votes from both files.")] = None,
    judge_name: Annotated[str | None, typer.Option(help="The judge (rater) to use when J holds several.")] = None,
    out_path: Annotated[Path | None, typer.Option("--out", help="Write the JSON report here.")] = None,
) -> None:
    """Human-only, judge-only and prediction-powered (PPI++) Bradley-Terry abilities with intervals and rank sets."""
    human = _one_dataset(read_ratings(human_path, qualify_prompts=False), dataset, human_path)
    judge = _one_dataset(read_ratings(judge_path, qualify_prompts=False), dataset, judge_path)
    items = paired_items(human, select_judge(judge, judge_name))
    report = rank_report(items, _anchor_index(items, human.subset(~human.excluded).compact(), anchor), level=level)
    document = report.to_json()
    _print(document)
    for note in document["notes"]:
        err.print(f"note: {note}", highlight=False)
    if out_path is not None:
        out_path.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        out.print(f"wrote {out_path}", highlight=False)


def _label(name: str, system_id: int | None) -> str:
    return name if system_id is None else f"{name} (#{system_id})"


def _cell(part: dict[str, Any]) -> str:
    low, high = part["interval"]
    return f"{part['estimate']:+.3f} [{low:+.3f}, {high:+.3f}]"


def _print(document: dict[str, Any]) -> None:
    level = f"{document['level']:.0%}"
    table = Table(
        title=f"Prediction-powered ranking (anchor {_label(document['anchor'], document['anchor_id'])} = 0; "
        f"{document['n_human_votes']:,} human votes on {document['n_labelled_items']:,} of {document['n_items']:,} "
        f"judged items; lambda {document['lambda']:.2f})"
    )
    table.add_column("system")
    for column in (f"PPI {level}", f"human only {level}", f"judge only {level}", "rank set", "effective human n"):
        table.add_column(column, justify="right")
    for row in document["systems"]:
        best, worst = row["rank_set"]
        effective = row["effective_human_n"]
        table.add_row(
            _label(row["system"], row["system_id"]),
            _cell(row["ppi"]),
            _cell(row["human"]),
            _cell(row["judge"]),
            str(best) if best == worst else f"{best}-{worst}",
            "anchor" if effective is None else f"{effective:,.0f}",
        )
    out.print(table)
    effective = document["effective_human_n"]
    out.print(
        f"effective human sample size {effective:,.0f} (from {document['n_human_votes']:,} human votes)"
        if effective is not None
        else "effective human sample size: n/a",
        highlight=False,
    )
    out.print(f"method: {document['method']}", highlight=False)
