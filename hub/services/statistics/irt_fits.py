"""Published IRT fits: a dataset's public pair judgements (excluded raters left out, automatic ties counted in the
tie rate) fitted with the toolkit's pairwise IRT model, refitted by a job only when the judgements changed.

The fit reads exactly the pair rows of the public `ratings` download (excluded and held-out ones too: the fit leaves
both out alike and counts them as excluded), systems identified by id, so
`chateval irt fit --ratings ratings.jsonl --dataset NAME --anchor ID` refits every published number (abilities,
bootstrap and rank intervals, pairwise tests) from the download: the fit puts the
judgements in a canonical order first, so the order of the rows does not matter.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from hub.models import IrtFit, System
from hub.services.human.ratings_rows import ratings_rows

log = logging.getLogger(__name__)
BOOTSTRAP = 200
SEED = 0
MIN_JUDGEMENTS = 20  # fewer say nothing a reader should see as a ranking


def public_judgement_rows(session: Session, dataset_name: str) -> list[dict[str, Any]]:
    """The dataset's pair rows of the ratings download, excluded and held-out ones included (flagged)."""
    return [row for row in ratings_rows(session, dataset_name) if row["item_kind"] == "pair"]


def digest(rows: list[dict[str, Any]]) -> str:
    """What the fit depends on; the report version is part of it, so a new report format refits every dataset."""
    from evaluation.irt.result import REPORT_VERSION

    key = [(r["rating_id"], r["outcome"], r["auto_tie"], r["excluded"] or r["held_out"]) for r in rows]
    return hashlib.sha256(json.dumps([REPORT_VERSION, key]).encode()).hexdigest()


def latest_fit(session: Session, dataset_name: str) -> IrtFit | None:
    query = select(IrtFit).where(IrtFit.dataset_name == dataset_name).order_by(col(IrtFit.id).desc())
    return session.exec(query).first()


def _anchor(session: Session, systems: tuple[str, ...]) -> str | None:
    """The scale's zero: the first baseline (by id) among the fitted systems (identified by id), so new systems do
    not move it."""
    query = select(System.id).where(System.is_baseline).order_by(col(System.id))
    return next((str(system_id) for system_id in session.exec(query) if str(system_id) in systems), None)


def refit(
    engine: Engine,
    dataset_name: str,
    *,
    bootstrap: int = BOOTSTRAP,
    progress: Callable[[float], None] | None = None,
) -> int | None:
    """Fit and store when the public judgements changed since the latest fit; the new fit's id, else None.

    progress, if given, is called with the fraction of the fit and its bootstrap done."""
    from evaluation.irt.result import fit_report
    from evaluation.judgements import from_records

    with Session(engine) as session:
        rows = public_judgement_rows(session, dataset_name)
        judged = sum(1 for r in rows if not (r["auto_tie"] or r["excluded"] or r["held_out"]))
        rows_digest = digest(rows)
        previous = latest_fit(session, dataset_name)
        if previous is not None and previous.judgements_digest == rows_digest:
            return None
        if judged < MIN_JUDGEMENTS:
            if previous is None or not previous.report:
                return None
            # Judgements were withdrawn (a system made private): an empty fit supersedes the published one.
            return _store(session, dataset_name, rows_digest, judged, {})
        judgements = from_records(rows, name=f"{dataset_name} ratings", qualify_prompts=False)
        report = fit_report(
            judgements, anchor=_anchor(session, judgements.systems), bootstrap=bootstrap, seed=SEED, progress=progress
        )
        return _store(session, dataset_name, rows_digest, judged, report.to_json())


def _store(session: Session, dataset_name: str, rows_digest: str, judged: int, payload: dict[str, Any]) -> int | None:
    """A new fit row (an empty `payload`: nothing to publish); older fits are kept."""
    fit = IrtFit(
        dataset_name=dataset_name,
        judgements_digest=rows_digest,
        n_judgements=judged,
        signature=payload.get("signature", {}),
        report=payload,
    )
    session.add(fit)
    session.commit()
    log.info("IRT fit #%s of %s: %s judgements", fit.id, dataset_name, judged)
    return fit.id


def judged_datasets(engine: Engine) -> list[str]:
    from hub.models import Experiment

    with Session(engine) as session:
        return sorted(set(session.exec(select(Experiment.dataset_name))))


def refit_all(engine: Engine) -> list[int]:
    """The periodic job: refit every dataset whose public judgements changed."""
    return [fit_id for name in judged_datasets(engine) if (fit_id := refit(engine, name)) is not None]
