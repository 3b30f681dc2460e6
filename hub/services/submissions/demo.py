"""Demo content for a first visit: the shipped baselines as public, evaluated systems. Idempotent."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub.models import Submission, SubmissionStatus, System
from hub.services.submissions.evaluation import EvaluationRun
from hub.storage import Storage

BASELINES = Path(__file__).resolve().parents[3] / "baselines"  # the repository root's baselines/
DESCRIPTIONS = {
    "echo": "Answers every prompt with the user's last turn, verbatim (see baselines/README.md).",
    "unigram": "Add-one unigram language model fitted on the prompts: answers with its most probable words; "
    "its reference log-likelihoods give the perplexity (see baselines/README.md).",
    "retrieval": "Leave-one-out nearest-neighbour retrieval: answers with the reference of the most similar other "
    "prompt of the set (TF-IDF cosine; see baselines/README.md).",
}


def seed_baselines(engine: Engine, storage: Storage, *, names: list[str] | None = None) -> list[int]:
    """Create and score a baseline system for each `baselines/DATASET/NAME.txt` (or only those in `names`);
    returns the new submission ids."""
    created = []
    for responses in sorted(BASELINES.glob("*/*.txt")):
        if names is not None and responses.stem not in names:
            continue
        dataset = load_dataset(responses.parent.name)
        name = responses.stem
        loglik = responses.with_name(f"{name}.loglik.jsonl")  # a system's own log-likelihoods, if it has any
        with Session(engine) as session:
            query = select(System).where(System.name == name, System.is_baseline)
            system = session.exec(query).first()
            if system is None:
                system = System(name=name, description=DESCRIPTIONS.get(name, ""), is_baseline=True, is_public=True)
                session.add(system)
                session.commit()
            exists = session.exec(
                select(Submission).where(Submission.system_id == system.id, Submission.dataset_name == dataset.name)
            ).first()
            if exists:
                continue
            submission = Submission(
                system_id=system.id,
                dataset_name=dataset.name,
                dataset_fingerprint=dataset.fingerprint,
                responses_sha256=storage.put(responses.read_bytes()),
                loglik_sha256=storage.put(loglik.read_bytes()) if loglik.exists() else None,
                status=SubmissionStatus.approved,
            )
            session.add(submission)
            session.commit()
            created.append(submission.id)
        EvaluationRun(engine, storage, submission.id).run()
    return created
