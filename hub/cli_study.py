"""`chateval study`: a study's data on the command line (its accepted post-edits as a reference dataset)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evaluation.cli.console import out

study_app = typer.Typer(help="Interactive studies.", no_args_is_help=True)


@study_app.command("references")
def references_command(
    study_id: Annotated[int, typer.Argument(help="The study's id.", min=1, max=2**31 - 1)],
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Dataset folder to write (default: DATASETS_HOME/NAME, installed).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Dataset name (default: study-ID-post-edits).")] = None,
    license_: Annotated[
        str | None, typer.Option("--license", help="Licence written into the manifest (default: unspecified).")
    ] = None,
) -> None:
    """Write the study's accepted post-edits as a dataset (context: the conversation so far; reference: the edited
    reply). By default into your datasets folder, where the hub and `chateval evaluate --dataset NAME` find it."""
    from sqlmodel import Session

    from evaluation.settings import get_settings
    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.services.studies.references import DEFAULT_LICENSE, default_name, write_reference_dataset

    upgrade()
    folder = out_dir if out_dir is not None else get_settings().user_datasets / (name or default_name(study_id))
    with Session(get_engine()) as session:
        dataset = write_reference_dataset(session, study_id, folder, name=name, license=license_ or DEFAULT_LICENSE)
    out.print(f"{dataset.fingerprint}: {len(dataset)} prompt(s) written to {dataset.path}", highlight=False)
