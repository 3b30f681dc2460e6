"""`chateval rubric check|list|run`: validate rubric YAML, and grade response files with an LLM judge."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from evaluation.cli.console import err, metric_progress, out
from evaluation.cli.llm import endpoint_config
from evaluation.dataset import load_dataset
from evaluation.errors import InvalidInputError
from evaluation.llm.cache import CallCache
from evaluation.llm.client import ChatClient
from evaluation.llm.errors import EndpointError
from evaluation.responses import ALLOW_EMPTY_HELP, read_responses
from evaluation.rubrics import GroupSummary, Rubric, grade_items, load_rubric, rubric_signature, shipped_rubrics
from evaluation.rubrics.items import dataset_items
from evaluation.rubrics.report import result_lines, run_header, write_jsonl
from evaluation.rubrics.summary import summarize


class ResponseFileFormat(StrEnum):
    auto = "auto"
    text = "text"
    jsonl = "jsonl"


app = typer.Typer(help="Rubric metrics (MILO): check rubric files, grade responses with an LLM judge.")
MAX_SOURCES = 100


@app.command("check")
def check_command(rubric: Annotated[str, typer.Argument(help="Rubric YAML file, or a shipped rubric's name.")]) -> None:
    """Validate a rubric and show what the judge will be asked (exit 3 naming the line of a problem)."""
    loaded = load_rubric(rubric)
    out.print(f"{escape(loaded.name)} ({loaded.id} v{loaded.version}): valid", highlight=False)
    out.print(f"signature: {rubric_signature(loaded)}", highlight=False)
    _print_rubric(loaded)


@app.command("list")
def list_command() -> None:
    """The shipped rubrics, usable by name."""
    table = Table()
    for column in ("name", "mode", "criteria", "pass threshold", "title"):
        table.add_column(column)
    for name in shipped_rubrics():
        rubric = load_rubric(name)
        table.add_row(name, rubric.mode, str(len(rubric.criteria)), f"{rubric.pass_threshold:g}", rubric.name)
    out.print(table)


@app.command("run")
def run_command(
    rubric: Annotated[str, typer.Option(help="Rubric YAML file, or a shipped rubric's name.")],
    dataset: Annotated[str, typer.Option(help="Dataset name or folder.")],
    responses: Annotated[
        list[str],
        typer.Option(help="Response file, as PATH or ID=PATH (ID defaults to the file name); repeat for several."),
    ],
    out_file: Annotated[Path, typer.Option("--out", help="Results JSONL to write.")],
    source_key: Annotated[
        str, typer.Option(help="What the IDs name: 'system', or e.g. 'rater' when grading raters' answers.")
    ] = "system",
    endpoint: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible API, up to /v1.")] = None,
    model: Annotated[str | None, typer.Option(help="Judge model name.")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML/JSON endpoint config (key by api_key_env: VAR).")] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the key (default CHATEVAL_LLM_API_KEY).")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight at once (default 8).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds to wait for one answer (default 60).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Longest judge answer, in tokens (default 512).")] = None,
    response_format: Annotated[ResponseFileFormat, typer.Option("--format", help="Response file format.")] = (
        ResponseFileFormat.auto
    ),
    cache: Annotated[
        Path | None, typer.Option(help="Call cache file (default: CHATEVAL_HOME/llm_cache.sqlite).")
    ] = None,
    use_cache: Annotated[
        bool, typer.Option("--cache-calls/--no-cache-calls", help="Answer repeats from the cache.")
    ] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help=ALLOW_EMPTY_HELP)] = False,
) -> None:
    """Grade every response of each file with the rubric (one judge call per response and criterion)."""
    loaded = load_rubric(rubric)
    data = load_dataset(dataset)
    if not 1 <= len(source_key) <= 64 or not source_key.isidentifier() or source_key in loaded.fields:
        raise typer.BadParameter("must be a short identifier other than a field name", param_hint="--source-key")
    items = []
    for source_id, path in _sources(responses):
        texts = read_responses(path, dataset=data, fmt=response_format.value, allow_empty=allow_empty)
        items += dataset_items(data, texts, source=(source_key, source_id))
    settings = {"max_tokens": max_tokens, "concurrency": concurrency, "timeout_s": timeout}
    cfg = endpoint_config(config=config, endpoint=endpoint, model=model, api_key_env=api_key_env, **settings)
    call_cache = CallCache(cache) if use_cache else None
    client = ChatClient(cfg, cache=call_cache)
    calls = len(items) * len(loaded.criteria)
    err.print(
        f"grading {len(items)} responses x {len(loaded.criteria)} criteria = {calls} judge calls with "
        f"{escape(str(cfg))}",
        highlight=False,
    )
    try:
        with metric_progress(progress) as update:
            report = None if update is None else (lambda done, total: update("judge calls", done, total))
            results = grade_items(loaded, items, client, progress=report)
    finally:
        err.print(f"usage: {client.usage.summary()}", highlight=False)
        if call_cache is not None:
            call_cache.close()
    summaries = summarize(loaded, results, by=source_key)
    header = run_header(loaded, judge=cfg.public_dict(), dataset=data.fingerprint, group_by=source_key)
    write_jsonl(out_file, result_lines(header, results, summaries))
    _print_summaries(loaded, summaries, source_key)
    outcomes = [c for r in results for c in r.criteria]
    if outcomes and all(c.status == "error" for c in outcomes):
        raise EndpointError(f"every judge call failed (first: {outcomes[0].problem}); results written to {out_file}")


def _sources(specs: list[str]) -> list[tuple[str, Path]]:
    if len(specs) > MAX_SOURCES:
        raise InvalidInputError(f"{len(specs)} response files; the limit is {MAX_SOURCES}")
    sources: list[tuple[str, Path]] = []
    for spec in specs:
        source_id, sep, path = spec.partition("=")
        if not sep or Path(spec).exists():
            source_id, path = Path(spec).stem, spec
        if not source_id or len(source_id) > 120 or any(not ch.isprintable() for ch in source_id):
            raise InvalidInputError(f"response file {spec!r}: the id must be 1 to 120 printable characters")
        if source_id in {s for s, _ in sources}:
            raise InvalidInputError(f"two response files have the id {source_id!r}: name them ID=PATH")
        sources.append((source_id, Path(path)))
    return sources


def _print_rubric(rubric: Rubric) -> None:
    unit = "of 1" if rubric.mode == "grading_scale" else f"of {rubric.max_score:g}"
    out.print(
        f"mode {rubric.mode}; REDO below {rubric.pass_threshold:g} {unit}; judge sees {', '.join(rubric.fields)}; "
        f"explanations up to {rubric.max_explanation_words} words",
        highlight=False,
    )
    table = Table()
    for column in ("criterion", "weight" if rubric.mode == "grading_scale" else "points", "harshness", "grades"):
        table.add_column(column, overflow="fold")
    for c in rubric.criteria:
        share = c.weight if rubric.mode == "grading_scale" else c.points
        grades = ", ".join(f"{g.label}={g.value:g}" for g in c.grades)
        table.add_row(f"{c.id} ({escape(c.name)})", f"{share:g}", c.harshness, escape(grades))
    out.print(table)


def _print_summaries(rubric: Rubric, summaries: list[GroupSummary], key: str) -> None:
    table = Table(title=f"{rubric.name}: {rubric.id} v{rubric.version} (counts in the results file)")
    for column in (key, "mean", "95% interval", "passed", "coverage", "unparseable", "errors"):
        table.add_column(column, justify="left" if column == key else "right", no_wrap=column != key)
    for s in summaries:
        interval = "-" if s.mean_interval is None else f"{s.mean_interval[0]:.3g}-{s.mean_interval[1]:.3g}"
        table.add_row(
            escape(s.group),
            "-" if s.mean is None else f"{s.mean:.3g}",
            interval,
            "-" if s.pass_rate is None else f"{s.pass_rate:.1%}",
            f"{s.coverage:.1%}",
            str(sum(c["unparseable"] for c in s.criteria.values())),
            str(sum(c["error"] for c in s.criteria.values())),
        )
    out.print(table)
