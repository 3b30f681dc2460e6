"""`chateval evaluate --conversations FILE`: function (and rubric) metrics over every turn and conversation of a
log, aggregated by system and role; `chateval metrics card NAME`.

With --json the output is JSON Lines, streamed as conversations are scored: a `run` record (metrics, their
signatures and gates), one `turn` record per scored turn (conversation id, turn index, role, values, gates that
skipped a metric), one `conversation` record per conversation, and a final `summary` (per system and role:
n, mean, sd, min, max). That is the shape a hub conversation-set submission stores.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import evaluation
from evaluation.cli.console import err, metric_progress, out
from evaluation.cli.llm import endpoint_config
from evaluation.errors import NotFoundError
from evaluation.function_metrics.conversations import read_conversations
from evaluation.function_metrics.registry import function_metrics, plan_for
from evaluation.function_metrics.rubric_turns import RubricTurns, parse_gate
from evaluation.function_metrics.runner import ConversationResult, Scored, Summary, score_conversations
from evaluation.llm.cache import CallCache
from evaluation.llm.client import ChatClient
from evaluation.metrics.registry import families, load_plugin_file
from evaluation.rubrics import load_rubric

LARGE_FILE_CONVERSATIONS = 1_000


def evaluate_command(
    path: Path,
    *,
    mixed: dict[str, object],
    metrics: Sequence[str] | None,
    plugins: Sequence[Path],
    as_json: bool,
    progress: bool | None,
    rubric: str | None = None,
    rubric_when: Sequence[str] = (),
    judge_config: Path | None = None,
) -> None:
    """`chateval evaluate --conversations FILE [--rubric R [--rubric-when M:MIN[:MAX]] [--judge-config F]]`.
    The options of response-file scoring are refused, not ignored. The judge's endpoint comes from
    --judge-config or the CHATEVAL_LLM_* settings; its calls are cached like every judge call."""
    given = [option for option, value in mixed.items() if value is not None]
    if rubric is None:  # options of a rubric run, without one
        given += [
            option for option, value in (("--rubric-when", rubric_when), ("--judge-config", judge_config)) if value
        ]
    if given:
        raise typer.BadParameter(f"--conversations scores a log on its own; drop {', '.join(given)}")
    if rubric is None:
        evaluate_conversations(path, metrics=metrics, plugins=plugins, as_json=as_json, progress=progress)
        return
    for plugin in plugins:  # before the gates are resolved
        load_plugin_file(plugin)
    config = endpoint_config(config=judge_config, endpoint=None, model=None, api_key_env=None)
    cache = CallCache()
    client = ChatClient(config, cache=cache)
    gates = tuple(parse_gate(text) for text in rubric_when)
    node = RubricTurns(load_rubric(rubric), client, judge=config.public_dict(), depends_on=gates)
    err.print(f"rubric {escape(node.name)} graded by {escape(str(config))}", highlight=False)
    try:
        evaluate_conversations(path, metrics=metrics, extra_nodes=[node], as_json=as_json, progress=progress)
    finally:
        err.print(f"usage: {client.usage.summary()}", highlight=False)
        cache.close()


def evaluate_conversations(
    path: Path,
    *,
    metrics: Sequence[str] | None,
    plugins: Sequence[Path] = (),
    extra_nodes: Sequence[Any] = (),
    as_json: bool = False,
    progress: bool | None = None,
) -> Summary:
    """Score a conversation log; the whole file and every metric's gates are checked before anything runs."""
    for plugin in plugins:
        load_plugin_file(plugin)
    nodes = plan_for(metrics, extra_nodes)
    conversations = read_conversations(path)
    summary = Summary()
    if as_json:
        _emit({"kind": "run", **_run_header(path, nodes, len(conversations))})
    slow = bool(extra_nodes) or len(conversations) >= LARGE_FILE_CONVERSATIONS  # judge calls, or a big file
    show = progress if progress is not None else slow
    with metric_progress(show) as update:
        done = calls = 0

        def judged(count: int) -> None:
            nonlocal calls
            calls += count
            if update is not None:
                update("judge calls", calls, calls)

        for node in extra_nodes:
            node.progress = judged

        def step(count: int) -> None:
            nonlocal done
            done += count
            if update is not None:
                update("conversations", done, len(conversations))

        for result in score_conversations(conversations, nodes, on_done=step):
            summary.add_result(result)
            if as_json:
                for record in _records(result):
                    _emit(record)
    if as_json:
        _emit({"kind": "summary", "groups": summary.rows()})
    else:
        _print_summary(path, len(conversations), summary)
    return summary


def _run_header(path: Path, nodes: Sequence[Any], conversations: int) -> dict[str, Any]:
    return {
        "file": str(path),
        "toolkit_version": evaluation.__version__,
        "conversations": conversations,
        "metrics": [node.to_dict() for node in nodes],
    }


def _records(result: ConversationResult) -> list[dict[str, Any]]:
    conversation = result.conversation
    ids = {"conversation": conversation.id, "system": conversation.system}
    records = [
        {"kind": "turn", **ids, "turn": index, "role": conversation.messages[index].role, **_scored(scored)}
        for index, scored in result.turns.items()
    ]
    records.append({"kind": "conversation", **ids, "line": conversation.line, **_scored(result.whole)})
    return records


def _scored(scored: Scored) -> dict[str, Any]:
    data: dict[str, Any] = {"values": scored.values}
    if scored.skipped:
        data["skipped"] = scored.skipped
    if scored.details:
        data["details"] = scored.details
    return data


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
    sys.stdout.flush()


def _print_summary(path: Path, conversations: int, summary: Summary) -> None:
    """Mean and sd per system, role and value (min and max are in --json's summary)."""
    table = Table(title=f"{path}  ({conversations} conversations)")
    for column in ("system", "role", "metric"):
        table.add_column(column, overflow="fold", no_wrap=column != "system")
    for column in ("n", "mean", "sd"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in summary.rows():
        numbers = [f"{row[k]:.4g}" if row[k] is not None else "-" for k in ("mean", "sd")]
        table.add_row(row["system"] or "-", row["role"] or "conversation", row["metric"], str(row["n"]), *numbers)
    out.print(table)


def card_command(
    name: Annotated[str, typer.Argument(help="Metric, or one of its values (length.words).")],
    plugin: Annotated[list[Path] | None, typer.Option(help="Python file declaring extra metrics.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The card as JSON.")] = False,
) -> None:
    """Show a metric's card: what it measures, what it does not, what it runs on and what gates it."""
    for path in plugin or []:
        load_plugin_file(path)
    specs = function_metrics()
    spec = specs.get(name) or next((s for s in specs.values() if name in s.value_names), None)
    if spec is not None:
        card = spec.to_dict()
    elif name in families():
        cls = families()[name]
        card = {"metric": name, "version": cls.version, "measures": cls.card.description}
        card |= {"higher_is_better": cls.card.higher_is_better, "needs": list(cls.card.needs)}
    else:
        raise NotFoundError(f"unknown metric {name!r} (see chateval metrics list)")
    if as_json:
        out.print_json(json.dumps(card))
        return
    for key, value in card.items():
        if value in (None, [], ""):
            continue
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        out.print(f"[bold]{escape(key.replace('_', ' '))}:[/] {escape(shown)}", highlight=False)


def register_metrics_commands(metrics_app: typer.Typer) -> None:
    metrics_app.command("card")(card_command)
