"""A hub with public data of every kind (scores, responses, human ratings, an IRT fit) and private data of every kind
beside it, and readers of published snapshots that check every file against the manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sqlmodel import Session, select

from hub import storage
from hub.models import Experiment, ItemKind, Submission, SubmissionStatus, System, User
from hub.services.human import assignments, raters
from hub.services.statistics import irt_fits
from tests.hub.conftest import DATASET, new_experiment, submitted_system

__all__ = ["new_experiment"]

# Strings that only private data holds: none of them may appear in any byte of a snapshot.
PRIVATE_NAME = "Zeta private bot QX7"
PRIVATE_DESCRIPTION = "private description QX7"
PRIVATE_RESPONSE = "private response QX7"
UNAPPROVED_RESPONSE = "unapproved response QX7"
RATER_EMAIL = "rater.secret.qx7@example.org"
PRIVATE_WORKER = "PRIVATEWORKERQX7"
INVITE_LABEL = "invite label QX7"


def rate_everything(engine, experiment_id: int, prefix: str, raters_n: int = 3) -> int:
    """Raters take every task (first choice left, then right, by rater); an admin reviews them so none is held out."""
    judged = 0
    with Session(engine) as session:
        admin = session.exec(select(User).where(User.is_admin)).first()
        experiment = session.get(Experiment, experiment_id)
        for r in range(raters_n):
            rater = raters.rater_for(session, "hub", f"{prefix}-{r}")
            while (assignment := assignments.claim_task(session, experiment, rater)) is not None:
                choices = {}
                for n, item in enumerate(assignments.task_items(session, assignment.task_id)):
                    choices[item.id] = ("left", "right", "tie")[(n + r) % 3]
                    judged += item.kind == ItemKind.pair
                assignments.submit(session, assignment, choices)
            raters.set_excluded(session, admin, rater.id, excluded=False)
    return judged


def seed_public(engine, admin, baselines) -> int:
    """Ratings of echo vs retrieval by three raters and one more by an email-named rater, then an IRT fit."""
    experiment = new_experiment(engine, admin, baselines)
    rate_everything(engine, experiment.id, "public-rater")
    rate_everything(engine, experiment.id, RATER_EMAIL, raters_n=1)
    assert irt_fits.refit(engine, DATASET, bootstrap=20) is not None
    return experiment.id


def seed_private(engine, admin, baselines) -> None:
    """A private system (and an experiment against it, rated), an unapproved submission of a public system, an
    experiment never launched, and an invite with a label."""
    from hub.services.human.raters import create_invite

    with Session(engine) as session:
        owner = session.exec(select(User).where(User.email == "owner@example.org")).one()
        hidden = submitted_system(session, PRIVATE_NAME, owner.id, False, [PRIVATE_RESPONSE] * 120)
        hidden.description = PRIVATE_DESCRIPTION
        session.add(hidden)
        visible = System(name="Public bot with a pending submission", owner_id=owner.id, is_public=True)
        session.add(visible)
        session.commit()
        data = ("\n".join([UNAPPROVED_RESPONSE] * 120) + "\n").encode()
        from evaluation.dataset import load_dataset

        session.add(
            Submission(
                system_id=visible.id,
                dataset_name=DATASET,
                dataset_fingerprint=load_dataset(DATASET).fingerprint,
                responses_sha256=storage.get_storage().put(data),
                status=SubmissionStatus.submitted,
            )
        )
        session.commit()
        hidden_id = hidden.id
    against_private = new_experiment(engine, admin, {"echo": baselines["echo"], "retrieval": hidden_id})
    with Session(engine) as session:
        experiment = session.get(Experiment, against_private.id)
        rater = raters.rater_for(session, "mturk", PRIVATE_WORKER)
        assignment = assignments.claim_task(session, experiment, rater)
        choices = {item.id: "left" for item in assignments.task_items(session, assignment.task_id)}
        assignments.submit(session, assignment, choices)
        create_invite(session, admin, experiment, label=INVITE_LABEL)
    new_experiment(engine, admin, baselines, launch=False)


def read_whole(root: Path) -> tuple[dict, dict[str, bytes]]:
    """Follow `latest.json` to a manifest and read every file it lists, checking each sha256; (manifest, files)."""
    pointer = json.loads((root / "latest.json").read_bytes())
    manifest_bytes = (root / pointer["manifest"]).read_bytes()
    assert hashlib.sha256(manifest_bytes).hexdigest() == pointer["manifest_sha256"]
    manifest = json.loads(manifest_bytes)
    files = {}
    for name, sha in manifest["files"].items():
        data = (root / pointer["version"] / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha, name
        files[name] = data
    return manifest, files


def every_byte(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
