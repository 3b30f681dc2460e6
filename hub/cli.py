"""`chateval` with the hub's commands (serve, worker, admin) added to the toolkit's CLI."""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from evaluation.cli.console import err, out
from evaluation.cli.main import app
from evaluation.cli.main import main as toolkit_main
from hub.cli_study import study_app
from hub.errors import HubError

admin_app = typer.Typer(help="Hub administration.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")
app.add_typer(study_app, name="study")


def _public_url_follows(host: str, port: int) -> None:
    """HUB_PUBLIC_URL, when not set, becomes this server's own address (so `--port 8080` gives invite links on 8080);
    a wildcard host (0.0.0.0, ::) is shown as 127.0.0.1, with a hint to set HUB_PUBLIC_URL for other machines."""
    from hub.settings import get_settings

    if "public_url" in get_settings().model_fields_set:
        return
    wildcard = host in ("", "0.0.0.0", "::")
    shown = "127.0.0.1" if wildcard else f"[{host}]" if ":" in host else host
    os.environ["HUB_PUBLIC_URL"] = f"http://{shown}:{port}"  # read again by the settings (and by child processes)
    get_settings.cache_clear()
    if wildcard:
        err.print(
            f"links the hub hands out (rater invites) use {os.environ['HUB_PUBLIC_URL']}; set HUB_PUBLIC_URL to the "
            "address other machines reach this hub at",
            highlight=False,
        )


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    demo: Annotated[bool, typer.Option(help="Add the shipped baselines as demo systems on start.")] = False,
    embedded_worker: Annotated[
        bool, typer.Option(help="Consume the job queue in this process (off when `chateval worker`s run).")
    ] = True,
) -> None:
    """Start the hub (FastAPI with uvicorn): SQLite, local files and an in-process queue by default. Unless
    HUB_PUBLIC_URL is set, links the hub hands out (rater invites) point at this host and port."""
    import uvicorn

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.storage import get_storage
    from hub.web.app import create_app

    _public_url_follows(host, port)
    upgrade()
    if demo:
        from hub.services.submissions.demo import seed_baselines

        created = seed_baselines(get_engine(), get_storage())
        err.print(f"demo: {len(created)} baseline submission(s) added and scored", highlight=False)
    uvicorn.run(create_app(embedded_worker=embedded_worker), host=host, port=port)


@app.command("worker")
def worker(workers: Annotated[int, typer.Option(help="Worker threads.")] = 1) -> None:
    """Consume the job queue (Redis with HUB_QUEUE_URL for many machines); stops on Ctrl-C / SIGTERM."""
    from hub.jobs import register, start_sweeper
    from hub.queue import get_huey

    register()
    start_sweeper()  # sends waiting jobs and retries lost evaluations every HUB_SWEEP_SECONDS
    get_huey().create_consumer(workers=workers, periodic=True).run()


@admin_app.command("create-user")
def create_user_command(
    email: Annotated[str, typer.Argument(help="Login email.")],
    name: Annotated[str, typer.Option("--name", help="Display name.")] = "",
    admin: Annotated[bool, typer.Option("--admin", help="Give admin rights.")] = False,
    password_stdin: Annotated[bool, typer.Option(help="Read the password from standard input.")] = False,
) -> None:
    """Create an account (admins can only be created here)."""
    from sqlmodel import Session

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.services.accounts.accounts import create_user

    password = sys.stdin.readline().rstrip("\n") if password_stdin else getpass.getpass("Password: ")
    upgrade()
    with Session(get_engine()) as session:
        user = create_user(
            session, email=email, password=password, display_name=name or email.split("@")[0], is_admin=admin
        )
    out.print(f"created {'admin' if user.is_admin else 'user'} {user.email} (id {user.id})", highlight=False)


@admin_app.command("disable-user")
def disable_user_command(
    email: Annotated[str, typer.Argument(help="Login email of the user.")],
    enable: Annotated[bool, typer.Option("--enable", help="Enable the user again instead.")] = False,
) -> None:
    """Disable a user (their sessions end; login and API tokens stop working), or --enable them. Audited."""
    from sqlmodel import Session

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.services.accounts.accounts import set_disabled, user_by_email

    upgrade()
    with Session(get_engine()) as session:
        user = set_disabled(session, None, user_by_email(session, email).id or 0, disabled=not enable)
    out.print(f"{'disabled' if user.disabled_at else 'enabled'} {user.email} (id {user.id})", highlight=False)


def _pairs(values: list[str] | None, option: str) -> dict[str, Path]:
    pairs = {}
    for value in values or []:
        dataset, sep, path = value.partition("=")
        if not sep or not dataset or not path:
            raise typer.BadParameter(f"expected DATASET=FILE, got {value!r}", param_hint=option)
        pairs[dataset] = Path(path)
    return pairs


@app.command("submit")
def submit(
    responses: Annotated[list[str], typer.Option(help="DATASET=FILE, one per dataset (repeatable).")],
    name: Annotated[str, typer.Option(help="System name.")],
    token: Annotated[str, typer.Option(envvar="CHATEVAL_TOKEN", help="API token (or CHATEVAL_TOKEN).")],
    url: Annotated[str, typer.Option(envvar="CHATEVAL_HUB_URL", help="Hub address (or CHATEVAL_HUB_URL).")] = (
        "http://127.0.0.1:8000"
    ),
    description: Annotated[str, typer.Option()] = "",
    paper_url: Annotated[str, typer.Option()] = "",
    code_url: Annotated[str, typer.Option()] = "",
    weights_url: Annotated[str, typer.Option()] = "",
    public: Annotated[bool, typer.Option("--public/--private", help="Publish results once approved.")] = False,
    baseline: Annotated[list[int] | None, typer.Option(help="Baseline system id to compare with (repeatable).")] = None,
    loglik: Annotated[list[str] | None, typer.Option(help="DATASET=FILE reference log-likelihoods.")] = None,
    allow_empty: Annotated[
        bool, typer.Option("--allow-empty", help="Blank lines in text files are meant: empty responses.")
    ] = False,
) -> None:
    """Submit response files to a hub through its API (what the web form does). Exit codes: 3 the hub refused a
    file or field, 4 a file is missing, 8 the hub cannot be reached or is busy, 9 the hub refused the token."""
    from hub.submit_client import SubmissionRequest
    from hub.submit_client import submit as send

    if not url.startswith(("http://", "https://")):
        raise typer.BadParameter(f"expected http://HOST[:PORT] or https://..., got {url!r}", param_hint="--url")
    request = SubmissionRequest(
        name=name,
        responses=_pairs(responses, "--responses"),
        loglik=_pairs(loglik, "--loglik"),
        description=description,
        paper_url=paper_url,
        code_url=code_url,
        weights_url=weights_url,
        public=public,
        allow_empty=allow_empty,
        baselines=list(baseline or []),
    )
    for submission in send(request, url=url, token=token):
        out.print(
            f"submission #{submission['id']} ({submission['dataset']}): {submission['status']}  "
            f"{url.rstrip('/')}/submissions/{submission['id']}",
            highlight=False,
        )


ratings_app = typer.Typer(
    help="Human judgements: import them from other systems, refit the published IRT model.", no_args_is_help=True
)
app.add_typer(ratings_app, name="ratings")


@ratings_app.command("import-chateval")
def import_chateval_command(
    votes: Annotated[Path, typer.Option(help="The original ChatEval's votes.csv.", exists=True, dir_okay=False)],
    prompts_dir: Annotated[
        Path | None,
        typer.Option(help="Folder of {ncm,dbdc}.txt prompt files: prompt texts and automatic ties.", file_okay=False),
    ] = None,
    responses_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder of the systems' EVALSET__NAME.txt response files: attached and scored.", file_okay=False
        ),
    ] = None,
) -> None:
    """Load the original ChatEval's crowd judgements as closed experiments (one per run); re-running adds nothing.
    With --responses-dir, the systems' original responses are attached to the same systems and scored."""
    from sqlmodel import Session

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.services.human.ratings_import import import_chateval
    from hub.storage import get_storage

    upgrade()
    with Session(get_engine()) as session:
        created = import_chateval(session, votes, prompts_dir)
    out.print(f"imported {len(created)} experiment(s)" + (f": #{created[0]}-#{created[-1]}" if created else ""))
    if created:
        out.print("the published IRT fits follow within 10 minutes (the refit job), or now: chateval ratings refit-irt")
    if responses_dir is not None:
        from hub.services.human.ratings_import import import_responses

        with Session(get_engine()) as session:
            _score_attached(session, import_responses(session, get_storage(), responses_dir))


def _score_attached(session, attached) -> None:
    """Score each newly attached submission here and now (its job taken from the outbox), with a progress bar."""
    from rich.progress import Progress

    from hub.db import get_engine
    from hub.services.platform import outbox
    from hub.services.submissions.evaluation import EvaluationRun
    from hub.storage import get_storage

    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("scoring attached responses", total=len(attached))
        for _submission, job in attached:
            if job is not None:
                outbox.dispatch(
                    session, job, lambda j: EvaluationRun(get_engine(), get_storage(), j.submission_id).run()
                )
            bar.advance(task)
    for submission, job in attached:
        session.refresh(submission)
        done = "attached" if job is not None else "already attached"
        out.print(
            f"system #{submission.system_id} on {submission.dataset_name}: {done}, submission "
            f"#{submission.id} {submission.status}",
            highlight=False,
        )


@ratings_app.command("attach-responses")
def attach_responses_command(
    system: Annotated[int, typer.Option(min=1, help="The existing system's id (e.g. one the import created).")],
    dataset: Annotated[str, typer.Option(help="The installed dataset the responses answer.")],
    responses: Annotated[Path, typer.Option(help="Response file (text or JSONL).", exists=True, dir_okay=False)],
    allow_empty: Annotated[bool, typer.Option(help="Blank lines are meant as empty responses.")] = False,
) -> None:
    """Attach a response file to an existing system and score it (no second system of the same name)."""
    from sqlmodel import Session

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.services.submissions.attached import attach_responses
    from hub.services.submissions.submissions import UploadedFile
    from hub.settings import get_settings
    from hub.storage import get_storage

    upgrade()
    if responses.stat().st_size > get_settings().max_upload_bytes:
        raise typer.BadParameter(f"{responses} is larger than HUB_MAX_UPLOAD_BYTES", param_hint="--responses")
    upload = UploadedFile(responses.name, responses.read_bytes())
    with Session(get_engine()) as session:
        attached = attach_responses(
            session,
            get_storage(),
            actor=None,
            system_id=system,
            dataset_name=dataset,
            upload=upload,
            allow_empty=allow_empty,
        )
        _score_attached(session, [attached])


@ratings_app.command("refit-irt")
def refit_irt_command(
    dataset: Annotated[list[str] | None, typer.Option(help="Refit this dataset (repeatable; default: all).")] = None,
    bootstrap: Annotated[int, typer.Option(min=1, help="Prompt-level bootstrap replicates.")] = 200,
) -> None:
    """Refit the published IRT model of each dataset whose public judgements changed since its last fit (what the
    periodic job does), with a progress bar per dataset."""
    from rich.progress import Progress, TaskID

    from hub.db import get_engine
    from hub.errors import NotFound
    from hub.migrate import upgrade
    from hub.services.statistics.irt_fits import judged_datasets, refit

    upgrade()
    engine = get_engine()
    judged = judged_datasets(engine)
    unknown = [name for name in dataset or [] if name not in judged]
    if unknown:
        known = ", ".join(judged) or "none"
        raise NotFound(f"no experiment on dataset {unknown[0]!r}; datasets with experiments: {known}")
    for name in dataset or judged:
        with Progress(console=err, transient=True) as bar:
            task = bar.add_task(f"IRT fit of {name}", total=1.0)

            def advance(done: float, bar: Progress = bar, task: TaskID = task) -> None:
                bar.update(task, completed=done)

            fit_id = refit(engine, name, bootstrap=bootstrap, progress=advance)
        out.print(f"{name}: " + (f"fit #{fit_id} published" if fit_id else "unchanged (or too few judgements)"))


@app.command("export")
def export_command(
    out_dir: Annotated[
        str | None, typer.Option("--out", help="Folder, or s3://bucket/prefix, to publish the snapshot to.")
    ] = None,
    s3: Annotated[str | None, typer.Option(hidden=True, help="Same as --out s3://bucket/prefix.")] = None,
) -> None:
    """Publish a versioned public snapshot: every public table as JSONL and CSV, one SQLite file of them all, an
    index.html and a manifest.json with their sha256; written whole before it appears (DIR/<version>/ and the
    DIR/latest pointers, or s3://bucket/prefix/<version>/ with the manifest last and prefix/latest.json)."""
    from rich.progress import Progress

    from hub.migrate import upgrade
    from hub.services.publishing.snapshot import publish_snapshot

    if (out_dir is None) == (s3 is None):
        raise typer.BadParameter("give --out DIR or --out s3://bucket/prefix", param_hint="--out")
    upgrade()
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("snapshot", total=None)

        def advance(step: str, done: int, total: int) -> None:
            bar.update(task, description=step, completed=done, total=total)

        published = publish_snapshot(out_dir or s3 or "", progress=advance)
    state = "unchanged, already published" if published.reused else "published"
    out.print(f"snapshot {published.version} {state}: {len(published.files)} file(s) at {published.location}")


def main(argv: list[str] | None = None) -> int:
    try:
        return toolkit_main(argv)
    except HubError as exc:
        where = f"{exc.field}: " if exc.field else ""
        err.print(f"[red]error:[/] {escape(where + exc.message)}", highlight=False)
        return 3 if exc.status_code < 500 else 1


def run() -> None:
    sys.exit(main())
