"""`chateval judge`: a pairwise LLM judge over a human experiment's pairs or a whole dataset, and its report card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from evaluation.cli.console import err, out
from evaluation.dataset import load_dataset
from evaluation.errors import InvalidInputError
from evaluation.judges.files import read_judge_file, write_judge_file
from evaluation.judges.pairs import SystemRef, dataset_pairs, parse_system, ratings_pairs
from evaluation.judges.report import Proportion, ReportCard, report_card
from evaluation.judges.run import JudgeIdentity, judge_pairs
from evaluation.judges.templates import DEFAULT_TEMPLATE, TEMPLATES, get_template
from evaluation.ratings_files import read_ratings
from evaluation.responses import ALLOW_EMPTY_HELP, read_responses

MAX_SYSTEMS = 64
MAX_PAIRS = 1_000_000  # two calls each: beyond this, judge against a baseline or split the run

app = typer.Typer(help="LLM judges: pairwise verdicts in both orders, and their report cards.", no_args_is_help=True)


def _responses(values: list[str], dataset, *, allow_empty: bool = False) -> dict[SystemRef, list[str]]:
    if len(values) > MAX_SYSTEMS:
        raise InvalidInputError(f"--responses: at most {MAX_SYSTEMS} systems, got {len(values)}")
    responses: dict[SystemRef, list[str]] = {}
    for value in values:
        label, sep, path = value.partition("=")
        if not sep or not path:
            raise InvalidInputError(f"--responses {value!r}: expected SYSTEM=FILE (SYSTEM is NAME or NAME#ID)")
        system = parse_system(label)
        if any(s.identity == system.identity for s in responses):
            raise InvalidInputError(f"--responses names system {system.describe()} twice")
        responses[system] = read_responses(Path(path), dataset=dataset, allow_empty=allow_empty)
    return responses


@app.command("pairwise")
def pairwise_command(
    dataset: Annotated[str, typer.Option(help="Dataset name or folder.")],
    responses: Annotated[
        list[str], typer.Option(help="SYSTEM=FILE, repeated: a system's response file (SYSTEM is NAME or NAME#ID).")
    ],
    out_path: Annotated[Path, typer.Option("--out", help="Judge file to write (JSONL, the ratings download's shape).")],
    pairs: Annotated[
        Path | None, typer.Option(help="A human experiment's ratings file: judge its (prompt, system pair) items.")
    ] = None,
    baseline: Annotated[str | None, typer.Option(help="Judge every system against this one only.")] = None,
    endpoint: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible API (up to /v1).")] = None,
    model: Annotated[str | None, typer.Option(help="Judge model name.")] = None,
    config: Annotated[Path | None, typer.Option(help="Endpoint config file (YAML/JSON; key via api_key_env).")] = None,
    template: Annotated[str, typer.Option(help=f"Prompt template ({', '.join(TEMPLATES)}).")] = DEFAULT_TEMPLATE,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse and store calls in the call cache.")] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help=ALLOW_EMPTY_HELP)] = False,
) -> None:
    """Ask a judge both orders of every pair and write its verdicts as judge judgements."""
    from evaluation.llm.cache import CallCache
    from evaluation.llm.client import ChatClient
    from evaluation.llm.config import EndpointConfig

    if pairs is not None and baseline is not None:
        raise typer.BadParameter("--baseline chooses pairs on a whole dataset; --pairs takes them from a ratings file")
    prompt_template = get_template(template)
    data = load_dataset(dataset)
    texts = _responses(responses, data, allow_empty=allow_empty)
    if pairs is not None:
        judgements = read_ratings(pairs, qualify_prompts=False)
        if data.name in judgements.datasets:
            judgements = judgements.for_dataset(data.name)
        elif judgements.datasets != ("",):
            raise InvalidInputError(
                f"no judgements for dataset {data.name!r} (it has {', '.join(judgements.datasets)})", path=pairs
            )
        items = ratings_pairs(judgements, data, texts)
    else:
        items = dataset_pairs(data, texts, baseline=parse_system(baseline) if baseline else None)
    if len(items) > MAX_PAIRS:
        raise InvalidInputError(f"{len(items):,} pairs to judge; at most {MAX_PAIRS:,} per run (try --baseline)")
    overrides = {"base_url": endpoint, "model": model}
    settings = EndpointConfig.from_file(config, **overrides) if config else EndpointConfig.from_settings(**overrides)
    judge = JudgeIdentity.for_endpoint(settings.base_url, settings.model, prompt_template.version)
    client = ChatClient(settings, cache=CallCache() if cache else None)
    label = "judge calls" if progress else False
    rows, summary = judge_pairs(
        items,
        lambda conversations: client.complete_many(conversations, progress=label),
        judge=judge,
        template=prompt_template,
    )
    write_judge_file(out_path, rows)
    err.print(
        f"{summary.pairs} pairs ({summary.auto_ties} identical: automatic ties), {summary.calls} calls: "
        f"{summary.graded} graded, {summary.inconsistent} inconsistent across orders (counted as ties), "
        f"{summary.ungraded} ungraded ({summary.unparseable_answers} unparseable answers, {summary.failed_calls} "
        f"failed calls) -> {out_path}",
        highlight=False,
    )
    err.print(f"judge {judge.rater}; usage: {client.usage.summary()}", highlight=False)


def _proportion(value: Proportion) -> str:
    if value.share is None or value.interval is None:
        return f"n/a (0 of {value.n})"
    low, high = value.interval
    return f"{value.share:.3f}  [{low:.3f}, {high:.3f}]  ({value.count} of {value.n})"


def _print_card(card: ReportCard) -> None:
    agreement: dict[str, Any] = card.human_agreement
    coverage = card.coverage
    length = card.length_preference
    kappa = agreement["cohen_kappa"]
    table = Table(title=f"{card.judge} on {card.dataset}  ({card.level:.0%} Wilson intervals)")
    table.add_column("figure")
    table.add_column("value", overflow="fold")
    table.add_row(
        "coverage",
        f"{coverage['graded']} of {coverage['asked']} pairs graded "
        f"({coverage['ungraded']} ungraded: {coverage['unparseable_answers']} unparseable answers, "
        f"{coverage['failed_calls']} failed calls; {coverage['auto_ties']} automatic ties)",
    )
    table.add_row("position consistency", _proportion(card.position_consistency))
    table.add_row("agreement with human majority", _proportion(agreement["agreement"]))
    table.add_row("Cohen's kappa (A/tie/B)", "n/a" if kappa is None else f"{kappa:.3f}")
    table.add_row(
        "items with both",
        f"{agreement['items']} ({agreement['human_items_not_graded']} human items not "
        f"graded by the judge, {agreement['judge_items_without_humans']} judged items without humans)",
    )
    table.add_row("longer response preferred: judge", _proportion(length["judge"]))
    table.add_row("longer response preferred: humans", _proportion(length["humans"]))
    table.add_row("  judge, all its items", _proportion(length["judge_all_items"]))
    out.print(table)
    out.print(card.signature, highlight=False)


@app.command("report")
def report_command(
    human: Annotated[Path, typer.Option(help="Human ratings file (the hub's ratings download, JSONL or CSV).")],
    judge: Annotated[Path, typer.Option(help="Judge file written by `chateval judge pairwise`.")],
    dataset: Annotated[str | None, typer.Option(help="Dataset (default: the judge file's only one).")] = None,
    level: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence level of the intervals.")] = 0.95,
    as_json: Annotated[bool, typer.Option("--json", help="The card as JSON (shape in evaluation.judges.report).")] = (
        False
    ),
) -> None:
    """A judge's report card against human judgements: consistency, agreement, length preference, coverage."""
    card = report_card(read_ratings(human, qualify_prompts=False), read_judge_file(judge), dataset=dataset, level=level)
    if as_json:
        out.print_json(json.dumps(card.to_dict()))
    else:
        _print_card(card)
