"""Import the original ChatEval's crowd judgements (`votes.csv`, 20 Mechanical Turk runs) as closed experiments.

One experiment per run (system A = `model_1`, system B = `model_2`), one item per judged prompt, one task and one
assignment per HIT, one rating per vote (0 = A better, 1 = B better, -1 = tie). The side each
response was shown on was not kept by the original system, so imported rows have no `left`/`choice`. With the
prompt file, prompts a run never showed become automatic ties (the original hid pairs with identical responses).
Systems are created by name, public, without responses. Importing the same file again adds nothing.

`import_responses` attaches the original systems' response files (`responses/ncm__cakechat.txt`, ...) to those
same systems (`ORIGINAL_NAMES` maps the file names to the names in votes.csv), so they get automatic scores.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session, select

from hub.errors import NotFound, UnprocessableInput
from hub.models import (
    Assignment,
    AssignmentStatus,
    Backend,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    OutboxJob,
    Rater,
    Rating,
    Submission,
    System,
    Task,
)
from hub.services.human.raters import public_hash
from hub.services.platform.datasets import installed_dataset
from hub.services.submissions.attached import attach_responses
from hub.services.submissions.public_names import public_namesake, refuse_public_clash
from hub.services.submissions.submissions import UploadedFile
from hub.settings import get_settings
from hub.storage import Storage
from hub.system_names import RefusedText, check_name

COLUMNS = ("run", "evalset", "model_1", "model_2", "prompt", "worker", "hit", "vote", "assign_secs")
OUTCOMES = {"0": "A", "1": "B", "-1": "tie"}
# The original systems' response files (`EVALSET__NAME.txt`) by the name their votes give them; other files keep
# their NAME as the system's name.
ORIGINAL_NAMES = {
    "ncm_original": "NCM",
    "cakechat": "Cakechat",
    "opennmt_seq2seq": "OpenNMT Seq2SeqAttn",
    "parlai_seq2seq_personachat": "ParlAI Seq2Seq PersonaChat",
}
RESPONSE_FILE = re.compile(r"^([a-z0-9][a-z0-9_-]{0,59})__([A-Za-z0-9][A-Za-z0-9_. -]{0,99})\.(txt|jsonl)$")
MAX_RESPONSE_FILES = 1_000
DESCRIPTION = "Imported with its crowd judgements from the original ChatEval (Sedoc et al., NAACL 2019)."


@dataclass
class Vote:
    line: int
    prompt: int
    worker: str
    hit: str
    outcome: str
    seconds: float | None


@dataclass
class Run:
    name: str
    evalset: str
    model_1: str
    model_2: str
    votes: list[Vote] = field(default_factory=list)


def read_votes(path: Path) -> dict[str, Run]:
    """Parse votes.csv; a bad row is refused with its line number and nothing is imported."""
    runs: dict[str, Run] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise UnprocessableInput(f"{path.name}, line 1: missing column(s) {', '.join(missing)}", field="votes")
        for line, row in enumerate(reader, start=2):
            where = f"{path.name}, line {line}"
            if row["vote"] not in OUTCOMES:
                raise UnprocessableInput(f"{where}: vote must be 0, 1 or -1, not {row['vote']!r}", field="votes")
            if not row["prompt"].isdigit():
                raise UnprocessableInput(f"{where}: prompt must be a line index, not {row['prompt']!r}", field="votes")
            if not row["worker"] or not row["hit"] or not row["run"]:
                raise UnprocessableInput(f"{where}: run, worker and hit must not be empty", field="votes")
            try:
                seconds = float(row["assign_secs"]) if row["assign_secs"] else None
            except ValueError:
                raise UnprocessableInput(f"{where}: assign_secs is not a number", field="votes") from None
            run = runs.setdefault(row["run"], Run(row["run"], row["evalset"], row["model_1"], row["model_2"]))
            if (run.evalset, run.model_1, run.model_2) != (row["evalset"], row["model_1"], row["model_2"]):
                raise UnprocessableInput(f"{where}: run {row['run']} changes its systems or set", field="votes")
            run.votes.append(Vote(line, int(row["prompt"]), row["worker"], row["hit"], OUTCOMES[row["vote"]], seconds))
    return runs


def _system(session: Session, name: str) -> System:
    """The hub's own public system of that name (imported before, or a baseline), else a new public one; a name
    that a researcher's public system holds (or one that looks like it) is refused with 409."""
    try:
        name = check_name(name)
    except RefusedText as exc:
        raise UnprocessableInput(f"model name {name!r}: {exc}", field="votes") from exc
    system = public_namesake(session, name)
    if system is not None and system.owner_id is not None:
        refuse_public_clash(session, name)
    if system is None:
        system = System(name=name, description=DESCRIPTION, is_public=True)
        session.add(system)
        session.flush()
    return system


def _rater(session: Session, worker: str, cache: dict[str, Rater]) -> Rater:
    if worker not in cache:
        backend = Backend.imported.value
        rater = session.exec(select(Rater).where(Rater.backend == backend, Rater.external_id == worker)).first()
        if rater is None:
            rater = Rater(backend=backend, external_id=worker, public_hash=public_hash(backend, worker))
            session.add(rater)
            session.flush()
        cache[worker] = rater
    return cache[worker]


def _prompt_lines(prompts_dir: Path | None, evalset: str) -> list[str] | None:
    if prompts_dir is None:
        return None
    path = prompts_dir / f"{evalset.lower()}.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else None


def import_chateval(session: Session, votes: Path, prompts_dir: Path | None = None) -> list[int]:
    """Import every run not imported before, in one transaction; returns the new experiment ids."""
    runs = read_votes(votes)
    imported = session.exec(select(Experiment).where(Experiment.backend == Backend.imported))
    existing = {(e.settings or {}).get("run") or e.title for e in imported}  # by original run id (older: title)
    raters: dict[str, Rater] = {}
    created = []
    try:
        for run in runs.values():
            if run.name in existing:
                continue
            created.append(_import_run(session, run, _prompt_lines(prompts_dir, run.evalset), raters))
        session.commit()
    except Exception:
        session.rollback()
        raise
    return created


def readable_title(run: Run) -> str:
    """A readable title, e.g. "Cakechat vs NCM (NCM, ChatEval 2019)"; the original run id stays in settings."""
    return f"{run.model_1} vs {run.model_2} ({run.evalset.upper()}, ChatEval 2019)"[:200]


def _import_run(session: Session, run: Run, prompts: list[str] | None, raters: dict[str, Rater]) -> int:
    experiment = Experiment(
        title=readable_title(run),
        dataset_name=run.evalset.lower(),
        dataset_fingerprint="chateval-2019",
        system_a_id=_system(session, run.model_1).id,
        system_b_id=_system(session, run.model_2).id,
        backend=Backend.imported,
        status=ExperimentStatus.closed,
        attention_checks_per_task=0,
        repeats_per_task=0,
        settings={"source": "chateval votes.csv", "run": run.name},
    )
    session.add(experiment)
    session.flush()
    by_hit: dict[str, list[Vote]] = defaultdict(list)
    for vote in run.votes:
        by_hit[vote.hit].append(vote)
    items: dict[int, ExperimentItem] = {}
    # One task per HIT: the original let a worker take two HITs holding the same prompt (1,409 such repeats in
    # votes.csv), which the hub's own tasks forbid; kept as they happened.
    for index, (hit, votes) in enumerate(sorted(by_hit.items(), key=lambda kv: kv[1][0].line)):
        task = Task(experiment_id=experiment.id, index=index, slots=1, claimed=1, completed=1, external_id=hit)
        session.add(task)
        session.flush()
        for vote in votes:
            if vote.prompt not in items:
                prompt = vote.prompt
                context = [{"role": "user", "content": prompts[prompt]}] if prompts and prompt < len(prompts) else []
                items[prompt] = ExperimentItem(
                    experiment_id=experiment.id, task_id=task.id, prompt_id=str(prompt), context=context
                )
                session.add(items[prompt])
        session.flush()
        rater = _rater(session, votes[0].worker, raters)
        assignment = Assignment(
            experiment_id=experiment.id,
            task_id=task.id,
            rater_id=rater.id,
            status=AssignmentStatus.approved,
            external_assignment_id=hit,
            seconds_on_task=votes[0].seconds,
        )
        session.add(assignment)
        session.flush()
        session.add_all(
            Rating(
                experiment_id=experiment.id,
                item_id=items[vote.prompt].id,
                assignment_id=assignment.id,
                rater_id=rater.id,
                outcome=vote.outcome,
            )
            for vote in votes
        )
    if prompts is not None:
        for prompt in range(len(prompts)):
            if prompt not in items:
                tie = ExperimentItem(
                    experiment_id=experiment.id,
                    prompt_id=str(prompt),
                    auto_tie=True,
                    context=[{"role": "user", "content": prompts[prompt]}],
                )
                session.add(tie)
                session.flush()
                session.add(Rating(experiment_id=experiment.id, item_id=tie.id, outcome="tie", auto_tie=True))
    session.flush()
    return experiment.id


def response_files(folder: Path) -> list[tuple[Path, str, str]]:
    """(file, dataset, system name) for each `EVALSET__NAME.txt` (or .jsonl) in `folder`; any other file is refused
    naming it, before anything is imported."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if len(files) > MAX_RESPONSE_FILES:
        raise UnprocessableInput(f"{folder}: {len(files):,} files; at most {MAX_RESPONSE_FILES:,}", field="responses")
    found = []
    for path in files:
        match = RESPONSE_FILE.fullmatch(path.name)
        if match is None:
            raise UnprocessableInput(
                f"{path.name}: expected EVALSET__SYSTEM.txt (e.g. ncm__cakechat.txt)", field="responses"
            )
        dataset, stem = match.group(1).lower(), match.group(2)
        found.append((path, dataset, ORIGINAL_NAMES.get(stem, stem)))
    return found


def import_responses(session: Session, storage: Storage, folder: Path) -> list[tuple[Submission, OutboxJob | None]]:
    """Attach each response file to the public system its votes name (created if it has none yet), checked whole
    first; returns each submission with its evaluation job (None: the same file was attached before). Empty lines
    are meant in the original files (`opennmt_seq2seq` line 178)."""
    files = response_files(folder)
    for _, dataset, _ in files:
        try:
            installed_dataset(dataset)
        except NotFound:
            raise NotFound(
                f"no dataset {dataset!r} on this hub: fetch it first (chateval datasets fetch {dataset})"
            ) from None
    limit = get_settings().max_upload_bytes
    attached = []
    for path, dataset, name in files:
        if path.stat().st_size > limit:
            raise UnprocessableInput(f"{path.name} is larger than {limit:,} bytes", field="responses")
        system = _system(session, name)
        session.commit()
        upload = UploadedFile(path.name, path.read_bytes())
        attached.append(
            attach_responses(
                session, storage, actor=None, system_id=system.id, dataset_name=dataset, upload=upload, allow_empty=True
            )
        )
    return attached
