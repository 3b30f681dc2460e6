"""`chateval`: evaluate response files offline, manage datasets, word vectors and metrics."""

from __future__ import annotations

import dataclasses
import gc
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TextIO

import click
import typer
from rich.markup import escape
from rich.table import Table

from evaluation.cli.console import err, metric_progress, out
from evaluation.dataset import load_dataset
from evaluation.errors import EvaluationError
from evaluation.evaluate import DEFAULT_METRICS, EvaluationReport, evaluate
from evaluation.loglik import read_loglik
from evaluation.metrics.registry import families, load_plugin_file
from evaluation.responses import ALLOW_EMPTY_HELP, read_responses

LARGE_FILE_PROMPTS = 10_000


class ResponseFileFormat(StrEnum):
    auto = "auto"
    text = "text"
    jsonl = "jsonl"


app = typer.Typer(
    help="ChatEval toolkit: score dialogue responses offline, exactly as the hub does.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
metrics_app = typer.Typer(help="Available metrics.", no_args_is_help=True)
app.add_typer(metrics_app, name="metrics")
_registered = False


def register_commands() -> None:
    """Import and add the sub-command modules. main() skips this for a plain `chateval evaluate`, which needs
    none of them: most import scipy.stats or aiohttp (1.5 s of CPU and 70 MB before any work)."""
    global _registered
    if _registered:
        return
    _registered = True
    from evaluation.cli import conversations as conversations_cli
    from evaluation.cli import datasets as datasets_cli
    from evaluation.cli import embeddings as embeddings_cli
    from evaluation.cli import irt as irt_cli
    from evaluation.cli import judges as judges_cli
    from evaluation.cli import llm as llm_cli
    from evaluation.cli import rank as rank_cli
    from evaluation.cli import rubrics as rubrics_cli

    app.add_typer(datasets_cli.app, name="datasets")
    app.add_typer(embeddings_cli.app, name="embeddings")
    app.add_typer(irt_cli.app, name="irt")
    app.add_typer(rank_cli.app, name="rank")
    app.add_typer(judges_cli.app, name="judge")
    llm_cli.register(app)
    app.add_typer(rubrics_cli.app, name="rubric")
    conversations_cli.register_metrics_commands(metrics_app)


def _split_metrics(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


@app.command("evaluate")
def evaluate_command(
    dataset: Annotated[str | None, typer.Option(help="Dataset name or folder.")] = None,
    responses: Annotated[Path | None, typer.Option(help="Response file: text (one line per prompt) or .jsonl.")] = None,
    conversations: Annotated[
        Path | None, typer.Option(help='Conversation log (JSONL of {"messages": [...]}) scored turn by turn instead.')
    ] = None,
    rubric: Annotated[str | None, typer.Option(help="With --conversations: rubric graded on assistant turns.")] = None,
    rubric_when: Annotated[
        list[str] | None, typer.Option(help="Grade only turns where METRIC:MIN[:MAX] holds, e.g. is-question:1.")
    ] = None,
    judge_config: Annotated[Path | None, typer.Option(help="Judge endpoint YAML/JSON (else CHATEVAL_LLM_*).")] = None,
    loglik: Annotated[Path | None, typer.Option(help="Reference log-likelihood JSONL (for perplexity).")] = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option(help=f"Metrics (repeat or comma-separate). Default: {', '.join(DEFAULT_METRICS)}."),
    ] = None,
    compat: Annotated[str | None, typer.Option(help="Compatibility configuration, e.g. chateval-2019.")] = None,
    embeddings: Annotated[Path | None, typer.Option(help="Word vectors for embedding-average.")] = None,
    response_format: Annotated[ResponseFileFormat, typer.Option("--format", help="Response file format.")] = (
        ResponseFileFormat.auto
    ),
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help=ALLOW_EMPTY_HELP)] = False,
    plugin: Annotated[list[Path] | None, typer.Option(help="Python file declaring extra @metric functions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON with signatures and per-prompt scores.")] = False,
    progress: Annotated[
        bool | None,
        typer.Option("--progress/--no-progress", help="Progress bar (default: on for large files)."),
    ] = None,
) -> None:
    """Score a response file against a dataset. With --conversations: every turn of a conversation log."""
    if conversations is not None:
        from evaluation.cli import conversations as conversations_cli

        conversations_cli.evaluate_command(
            conversations,
            mixed={"--dataset": dataset, "--responses": responses, "--loglik": loglik, "--compat": compat},
            metrics=_split_metrics(metrics),
            plugins=plugin or [],
            as_json=as_json,
            progress=progress,
            rubric=rubric,
            rubric_when=rubric_when or (),
            judge_config=judge_config,
        )
        return
    if dataset is None or responses is None:  # required unless --conversations is given
        raise click.MissingParameter(
            param_hint="'--dataset'" if dataset is None else "'--responses'", param_type="option"
        )
    for path in plugin or []:
        load_plugin_file(path)
    data = load_dataset(dataset)
    texts = read_responses(responses, dataset=data, fmt=response_format.value, allow_empty=allow_empty)
    likelihoods = read_loglik(loglik, dataset=data) if loglik else None
    show_progress = progress if progress is not None else len(data) >= LARGE_FILE_PROMPTS
    with metric_progress(show_progress) as update:
        report = evaluate(
            data,
            texts,
            metrics=_split_metrics(metrics),
            compat=compat,
            embeddings=str(embeddings) if embeddings else None,
            loglik=likelihoods,
            progress=update,
        )
    if as_json:
        write_report_json(report, sys.stdout)
    else:
        _print_report(report)


def write_report_json(report: EvaluationReport, stream: TextIO) -> None:
    """`report.to_dict()` as JSON, written a metric at a time by the C encoder: no terminal formatter on the
    data path (rich's print_json spent 10 s on 100,000 prompts) and no deep copy of every score."""
    head = dataclasses.replace(report, outcomes=[]).to_dict()
    head.pop("metrics")
    head.pop("prompt_ids")
    stream.write(json.dumps(head)[:-1] + ', "metrics": [')
    for i, outcome in enumerate(report.outcomes):
        stream.write(("\n" if i == 0 else ",\n") + json.dumps(outcome.to_dict()))
    stream.write(("\n], " if report.outcomes else "], ") + '"prompt_ids": ' + json.dumps(list(report.prompt_ids)))
    stream.write("}\n")
    stream.flush()


def _print_report(report: EvaluationReport) -> None:
    table = Table(title=f"{report.dataset}  ({len(report.prompt_ids)} prompts)")
    table.add_column("metric")
    table.add_column("score", justify="right")
    table.add_column("signature", overflow="fold")
    for outcome in report.outcomes:
        if outcome.result is None:
            table.add_row(outcome.metric, "n/a", f"[yellow]{outcome.unavailable}[/]")
        else:
            table.add_row(outcome.metric, f"{outcome.result.corpus:.4f}", outcome.result.signature)
    out.print(table)


@metrics_app.command("list")
def metrics_list(
    plugin: Annotated[list[Path] | None, typer.Option(help="Python file declaring extra @metric functions.")] = None,
) -> None:
    """List registered metric families with their version and card."""
    for path in plugin or []:
        load_plugin_file(path)
    table = Table()
    for column in ("metric", "version", "higher is better", "needs", "description"):
        table.add_column(column, overflow="fold")
    for name, cls in families().items():
        better = {True: "yes", False: "no", None: "-"}[cls.card.higher_is_better]
        label = f"{name}-N" if cls.parameter else name
        table.add_row(label, cls.version, better, ", ".join(cls.card.needs), cls.card.description)
    out.print(table)


def _top_level_command(args: list[str]) -> bool:
    """Whether `args` run a command registered on `app` itself (`chateval export`, `serve`, ...; not `evaluate`,
    whose `--conversations` needs the groups), which needs none of the sub-command groups."""
    names = {info.name for info in app.registered_commands if info.name and info.name != "evaluate"}
    return bool(args) and args[0] in names


def main(argv: list[str] | None = None) -> int:
    """Console entry point: known errors become one clear line on stderr and a documented exit code.

    Usage errors are left to typer's standalone mode (message and exit code 2), which exits by SystemExit.
    """
    args = sys.argv[1:] if argv is None else argv
    plain_evaluate = args[:1] == ["evaluate"] and "--conversations" not in args
    if not plain_evaluate and not _top_level_command(args):
        register_commands()
    collecting = gc.isenabled()
    if plain_evaluate:
        # It builds and drops millions of small acyclic objects (prompts, token lists); the cyclic collector
        # would walk every live object again and again: a third of the CPU time at 100,000 prompts.
        gc.disable()
    try:
        app(args=argv, prog_name="chateval")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except EvaluationError as exc:
        err.print(f"[red]error:[/] {escape(exc.describe())}", highlight=False)
        return exc.exit_code
    finally:
        if collecting:
            gc.enable()
    return 0


def run() -> None:
    sys.exit(main())
