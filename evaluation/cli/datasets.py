"""`chateval datasets`: list, show, import from ChatEval text files, fetch public sets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from evaluation.cli.console import out
from evaluation.dataset import check_manifest_fields, installed_dataset_dirs, load_dataset, load_dataset_dir, reseal
from evaluation.errors import EvaluationError
from evaluation.fetch import fetch_dataset, fetchable
from evaluation.settings import get_settings
from evaluation.text_import import import_text

app = typer.Typer(help="Evaluation datasets.", no_args_is_help=True)


@app.command("list")
def list_datasets() -> None:
    """Installed datasets (verified) and public ones that can be fetched."""
    table = Table()
    for column in ("name", "version", "prompts", "status", "location"):
        table.add_column(column, overflow="fold")
    installed = installed_dataset_dirs()
    for name, folder in installed.items():
        try:
            data = load_dataset_dir(folder)
            table.add_row(name, data.manifest.version, str(len(data)), "ok", str(folder))
        except EvaluationError as exc:
            table.add_row(name, "?", "?", f"[red]broken[/]: {escape(exc.message)}", str(folder))
    for name in fetchable():
        if name not in installed:
            table.add_row(name, "", "", "not fetched: `chateval datasets fetch " + name + "`", "")
    out.print(table)


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Dataset name or folder.")],
    prompts: Annotated[int, typer.Option(help="How many prompts to print.")] = 5,
) -> None:
    """Print a dataset's manifest and its first prompts."""
    data = load_dataset(name)
    manifest = data.manifest
    out.print(f"[bold]{manifest.name}[/] {manifest.version}  ({len(data)} prompts, {data.fingerprint})")
    for field in ("description", "source", "license", "citation"):
        out.print(f"{field}: {escape(getattr(manifest, field))}", highlight=False)
    for prompt in data.prompts[:prompts]:
        out.print(f"\n[bold]{escape(prompt.id)}[/]", highlight=False)
        for turn in prompt.context:
            out.print(f"  {turn.role}: {escape(turn.content)}", highlight=False)
        for reference in prompt.references:
            out.print(f"  reference: {escape(reference)}", highlight=False)


@app.command("import-text")
def import_text_command(
    name: Annotated[str, typer.Option(help="Dataset name (lower-case, digits, . _ -).")],
    prompts: Annotated[Path, typer.Option(help="Prompts file, one prompt per line.")],
    references: Annotated[list[Path], typer.Option(help="References file, one per line (repeatable).")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder (default: user datasets).")] = None,
    version: Annotated[str, typer.Option()] = "1.0.0",
    description: Annotated[str, typer.Option()] = "",
    source: Annotated[str, typer.Option()] = "",
    license: Annotated[str, typer.Option("--license")] = "unknown",
    citation: Annotated[str, typer.Option()] = "",
    turn_separator: Annotated[
        str | None, typer.Option(help="Split each prompt line into turns on this string (last turn: user).")
    ] = None,
) -> None:
    """Build a dataset folder (manifest + checksummed prompts.jsonl) from ChatEval-style text files."""
    fields = dict(
        name=name, version=version, description=description, source=source, license=license, citation=citation
    )
    check_manifest_fields(fields)  # before anything is written
    target = out_dir or get_settings().user_datasets / name
    target.parent.mkdir(parents=True, exist_ok=True)
    data = import_text(
        out=target,
        prompts_path=prompts,
        reference_paths=references,
        manifest_fields=fields,
        turn_separator=turn_separator,
    )
    out.print(f"imported {len(data)} prompts into {target} ({data.fingerprint})", highlight=False)


@app.command("fetch")
def fetch(
    name: Annotated[str, typer.Argument(help="Public dataset name (see `chateval datasets list`).")],
    mirror: Annotated[
        str | None, typer.Option(help="Fetch the same file names from this URL prefix or local folder.")
    ] = None,
    force: Annotated[bool, typer.Option(help="Fetch again even if already installed.")] = False,
) -> None:
    """Download a public dataset, verify its checksums and install it."""
    data = fetch_dataset(name, mirror=mirror, force=force)
    out.print(f"{data.fingerprint}: {len(data)} prompts in {data.path}", highlight=False)


@app.command("rehash")
def rehash(
    folder: Annotated[Path, typer.Argument(help="Dataset folder whose prompts.jsonl was edited.")],
) -> None:
    """Write the current checksum of prompts.jsonl into manifest.json (after a deliberate edit)."""
    data = reseal(folder)
    out.print(f"{data.fingerprint}: {len(data)} prompts verified", highlight=False)
