"""`chateval generate`, `chateval judge-server` and `chateval llm cache`: live endpoints from the command line."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from evaluation.cli.console import err, out
from evaluation.dataset import load_dataset
from evaluation.errors import ConfigurationError, EvaluationError
from evaluation.llm.cache import CallCache, default_cache_path
from evaluation.llm.config import EndpointConfig

if TYPE_CHECKING:
    from evaluation.llm.generate import GenerationReport

INTERRUPTED_EXIT_CODE = 130

llm_app = typer.Typer(help="LLM endpoints: the call cache.", no_args_is_help=True)
cache_app = typer.Typer(help="Inspect or prune the cache of endpoint calls.", no_args_is_help=True)
llm_app.add_typer(cache_app, name="cache")

CacheOption = Annotated[
    Path | None, typer.Option("--cache", help="Cache file (default: CHATEVAL_HOME/llm_cache.sqlite).")
]


class GenerationInterrupted(EvaluationError):
    """Ctrl-C during a run: finished lines are kept; the same command resumes."""

    exit_code = INTERRUPTED_EXIT_CODE


def register(app: typer.Typer) -> None:
    """Add this module's commands to the `chateval` app."""
    app.add_typer(llm_app, name="llm")
    app.command("generate")(generate_command)
    app.command("judge-server")(judge_server_command)


def endpoint_config(
    *,
    config: Path | None,
    endpoint: str | None,
    model: str | None,
    api_key_env: str | None,
    **settings: float | int | None,
) -> EndpointConfig:
    """Options win over the --config file, which wins over CHATEVAL_LLM_* settings."""
    overrides = {"base_url": endpoint, "model": model, **settings}
    if api_key_env is not None:
        if api_key_env not in os.environ:
            raise ConfigurationError(f"--api-key-env names {api_key_env}, which is not set")
        overrides["api_key"] = os.environ[api_key_env]
    if config is not None:
        return EndpointConfig.from_file(config, **overrides)
    return EndpointConfig.from_settings(**overrides)


def generate_command(
    dataset: Annotated[str, typer.Option(help="Dataset name or folder.")],
    out_file: Annotated[Path, typer.Option("--out", help="Response file to write (JSONL; resumed if it exists).")],
    endpoint: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible API, up to /v1.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name the endpoint serves.")] = None,
    system_prompt: Annotated[str | None, typer.Option(help="System message sent before each conversation.")] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature (default 0).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Longest answer, in tokens (default 512).")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight at once (default 8).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds to wait for one answer (default 60).")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML/JSON endpoint config (key by api_key_env: VAR).")] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the key (default CHATEVAL_LLM_API_KEY).")
    ] = None,
    loglik_out: Annotated[
        Path | None, typer.Option(help="Also write reference log-likelihoods here (needs /v1/completions echo).")
    ] = None,
    cache: CacheOption = None,
    use_cache: Annotated[
        bool, typer.Option("--cache-calls/--no-cache-calls", help="Answer repeats from the cache.")
    ] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
) -> None:
    """Send each prompt's conversation to an endpoint and write a response file `chateval evaluate` reads."""
    from evaluation.llm.client import ChatClient  # aiohttp: imported only by the commands that call endpoints
    from evaluation.llm.generate import generate_loglik, generate_responses

    data = load_dataset(dataset)
    settings = {"temperature": temperature, "max_tokens": max_tokens, "concurrency": concurrency, "timeout_s": timeout}
    cfg = endpoint_config(config=config, endpoint=endpoint, model=model, api_key_env=api_key_env, **settings)
    call_cache = CallCache(cache) if use_cache else None
    client = ChatClient(cfg, cache=call_cache)
    err.print(f"generating with {escape(str(cfg))} for {len(data)} prompts of {data.name}", highlight=False)
    try:
        report = generate_responses(data, client, out_file, system_prompt=system_prompt, progress=progress)
        _summarise("responses", report, out_file)
        loglik_report = None
        if loglik_out is not None and report.complete:
            loglik_report = generate_loglik(data, client, loglik_out, system_prompt=system_prompt, progress=progress)
            _summarise("log-likelihoods", loglik_report, loglik_out)
    except KeyboardInterrupt:
        raise GenerationInterrupted(
            "interrupted; every finished answer is saved: run the same command again to resume"
        ) from None
    finally:
        err.print(f"usage: {client.usage.summary()}", highlight=False)
        if call_cache is not None:
            call_cache.close()
    for label, item in (("responses", report), ("log-likelihoods", loglik_report)):
        if item is not None and item.failed:
            prompt_id, first = item.failed[0]
            first.message = (
                f"{len(item.failed)} of {item.total} {label} failed (first, prompt {prompt_id!r}: {first.message}); "
                "the others are saved: run the same command again to retry the rest"
            )
            raise first


def _summarise(label: str, report: GenerationReport, path: Path) -> None:
    err.print(
        f"{label}: {report.written} written, {report.already_done} already in {escape(str(path))}, "
        f"{len(report.failed)} failed, of {report.total}",
        highlight=False,
    )


def judge_server_command(
    rules: Annotated[
        Path | None, typer.Option(help="YAML reply rules: default, rules [{pattern, reply}], faults.")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8089,
    latency_ms: Annotated[
        float, typer.Option(help="Simulated latency of every answer, in ms.", min=0, max=600_000)
    ] = 0,
    expected_key_env: Annotated[
        str | None, typer.Option(help="Answer 401 unless the Bearer key equals this variable's value.")
    ] = None,
) -> None:
    """Run a local OpenAI-compatible endpoint in the foreground (Ctrl-C stops it): rehearse a run with no API key."""
    from evaluation.llm.server import LocalChatServer

    expected = None
    if expected_key_env is not None:
        if expected_key_env not in os.environ:
            raise ConfigurationError(f"--expected-key-env names {expected_key_env}, which is not set")
        expected = os.environ[expected_key_env]
    server = LocalChatServer(rules, latency_s=latency_ms / 1000, expected_key=expected, host=host, port=port)
    with server:
        out.print(f"judge-server: OpenAI-compatible endpoint at {server.base_url} (Ctrl-C stops)", highlight=False)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            err.print(f"judge-server: stopped after {server.requests} request(s)", highlight=False)


@cache_app.command("stats")
def cache_stats(
    cache: CacheOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
) -> None:
    """Entries, size, hits and models of the call cache."""
    with CallCache(cache or default_cache_path()) as store:
        stats = store.stats()
    if as_json:
        out.print_json(json.dumps(stats.to_dict()))
        return
    table = Table(title=f"LLM call cache  {stats.path}")
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("entries", f"{stats.entries:,}")
    table.add_row("size", f"{stats.bytes / 1e6:.2f} MB")
    table.add_row("re-used answers (hits)", f"{stats.hits:,}")
    for label, when in (("oldest", stats.oldest), ("newest", stats.newest)):
        table.add_row(label, "-" if when is None else datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds"))
    for model, count in stats.by_model.items():
        table.add_row(f"model {model}", f"{count:,}")
    out.print(table)


@cache_app.command("prune")
def cache_prune(
    older_than: Annotated[
        float | None, typer.Option(help="Delete entries not used for this many days.", min=0, max=100_000)
    ] = None,
    all_entries: Annotated[bool, typer.Option("--all", help="Delete every entry.")] = False,
    cache: CacheOption = None,
) -> None:
    """Delete old entries (by last use) or all of them; prints how many went."""
    if older_than is None and not all_entries:
        raise typer.BadParameter("give --older-than DAYS or --all")
    with CallCache(cache or default_cache_path()) as store:
        removed = store.prune(older_than_days=None if all_entries else older_than)
    out.print(f"removed {removed:,} cached call(s)", highlight=False)
