"""The database scripts/bench_web.py measures, seeded in seconds with bulk inserts and explicit ids (a fresh
database): synthetic datasets, public systems evaluated on each (responses in storage, four scores), closed crowd
experiments between neighbouring systems with outcomes from known abilities, and an IRT fit of every dataset."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np

METRICS = (("bleu-2", True), ("distinct-1", True), ("distinct-2", True), ("avg-length", None))
RATERS_PER_PROMPT, PROMPTS_PER_TASK, SYSTEMS_PER_DATASET_FIT = 3, 10, 40


def write_datasets(folder: Path, count: int, prompts: int) -> list[str]:
    names = []
    for d in range(count):
        name = f"bench-d{d}"
        target = folder / name
        target.mkdir(parents=True)
        lines = [
            json.dumps(
                {
                    "id": f"d{d}-p{p:04d}",
                    "context": [{"role": "user", "content": f"Question {p} of set {d}: what do you think?"}],
                    "references": [f"I think {p} is fine.", f"Set {d} answer {p}."],
                }
            )
            for p in range(prompts)
        ]
        body = ("\n".join(lines) + "\n").encode()
        (target / "prompts.jsonl").write_bytes(body)
        manifest = {
            "name": name,
            "version": "1.0.0",
            "description": f"Synthetic benchmark set {d}.",
            "source": "scripts/bench_web.py",
            "license": "CC0-1.0",
            "citation": "none",
            "prompts_sha256": hashlib.sha256(body).hexdigest(),
        }
        (target / "manifest.json").write_text(json.dumps(manifest))
        names.append(name)
    return names


def _reset_sequences(session, tables: list[str]) -> None:
    import sqlalchemy as sa

    if session.get_bind().dialect.name != "postgresql":
        return
    for table in tables:
        session.execute(
            sa.text(f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'), (SELECT max(id) FROM \"{table}\"))")
        )


def seed(args: argparse.Namespace, datasets: list[str]) -> dict:
    """Everything in a few bulk inserts with explicit ids (a fresh database); returns what the pages need."""
    import sqlalchemy as sa
    from sqlmodel import Session

    from evaluation.dataset import load_dataset
    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.models import Score, Submission, System
    from hub.models.common import utcnow
    from hub.models.data_version import bump
    from hub.services.accounts.accounts import create_token, create_user
    from hub.services.statistics.irt_fits import refit
    from hub.storage import get_storage
    from hub.system_names import name_key

    upgrade()
    engine, storage, now = get_engine(), get_storage(), utcnow()
    rng = np.random.default_rng(7)
    ability = rng.normal(0.0, 1.0, args.systems)
    started = time.perf_counter()
    with Session(engine) as session:
        admin = create_user(
            session, email="bench@example.org", password="correct horse battery", display_name="bench", is_admin=True
        )
        token = create_token(session, admin, name="bench")[1]
        systems = [
            {"id": i + 1, "name": f"bench-sys-{i:03d}", "description": "", "is_public": True, "owner_id": admin.id}
            for i in range(args.systems)
        ]
        for row in systems:
            row |= {"public_name_key": name_key(row["name"]), "created_at": now}
        session.execute(sa.insert(System.__table__), systems)
        submissions, scores = [], []
        for d, name in enumerate(datasets):
            dataset = load_dataset(name)
            for i in range(args.systems):
                lines = [f"system {i} says {p} on {d}" for p in range(len(dataset.prompts))]
                sha = storage.put(("\n".join(lines) + "\n").encode())
                sid = len(submissions) + 1
                submissions.append(
                    {
                        "id": sid,
                        "system_id": i + 1,
                        "owner_id": admin.id,
                        "dataset_name": name,
                        "dataset_fingerprint": dataset.fingerprint,
                        "responses_sha256": sha,
                        "responses_format": "text",
                        "baseline_ids": [],
                        "status": "evaluated",
                        "progress": 1.0,
                        "attempts": 1,
                        "worker_losses": 0,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
                for metric, higher in METRICS:
                    per_prompt = rng.random(len(dataset.prompts)).round(4).tolist()
                    scores.append(
                        {
                            "id": len(scores) + 1,
                            "submission_id": sid,
                            "metric": metric,
                            "version": "1",
                            "signature": f"{metric}|v1|bench",
                            "corpus": float(np.mean(per_prompt) + 0.01 * ability[i]),
                            "higher_is_better": higher,
                            "per_prompt": per_prompt,
                            "details": {},
                            "created_at": now,
                        }
                    )
        session.execute(sa.insert(Submission.__table__), submissions)
        for start in range(0, len(scores), 2000):
            session.execute(sa.insert(Score.__table__), scores[start : start + 2000])
        seeded = _seed_judgements(session, args, datasets, ability, rng, now)
        _reset_sequences(session, ["system", "submission", "score", "experiment", "task", "experimentitem"])
        _reset_sequences(session, ["rater", "assignment", "rating"])
        bump(session)  # Core inserts on tables: the hook does not see them
        session.commit()
    seeded_s = time.perf_counter() - started
    started = time.perf_counter()
    for name in datasets:
        refit(engine, name, bootstrap=args.bootstrap)
    fit_s = time.perf_counter() - started
    settle(engine)
    engine.dispose()
    print(f"seeded in {seeded_s:.1f} s, IRT fits in {fit_s:.1f} s ({args.bootstrap} bootstrap resamples)", flush=True)
    return {"token": token, **seeded}


def settle(engine) -> None:
    """On PostgreSQL, VACUUM ANALYZE after the bulk load, as autovacuum does to a live database soon after (and as
    PostgreSQL's documentation asks after a bulk load): otherwise the first reader of 600,000 fresh rows sets their
    hint bits, writing every page back, and plans without statistics (the first export took 35 s, the next 21 s)."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE")


def _seed_judgements(session, args, datasets, ability, rng, now) -> dict:
    """Closed experiments between neighbouring systems of each dataset (a connected comparison graph), 3 raters per
    prompt in tasks of 10 prompts; outcomes from the systems' abilities, each prompt's discrimination and 20% ties."""
    import sqlalchemy as sa

    from hub.models import Assignment, Experiment, ExperimentItem, Rater, Rating, Task

    tables = {m.__name__: m for m in (Assignment, Experiment, ExperimentItem, Rater, Rating, Task)}
    per_experiment = args.prompts * RATERS_PER_PROMPT
    per_dataset = max(1, math.ceil(args.ratings / (len(datasets) * per_experiment)))
    raters = [
        {
            "id": r + 1,
            "backend": "imported",
            "external_id": f"worker-{r}",
            "public_hash": hashlib.sha256(f"bench-{r}".encode()).hexdigest(),
            "excluded": False,
            "blocked": False,
            "reviewed_at": now,
            "created_at": now,
        }
        for r in range(300)
    ]
    session.execute(sa.insert(tables["Rater"].__table__), raters)
    experiments, tasks, items, assignments, ratings = [], [], [], [], []
    for d, name in enumerate(datasets):
        prompt_ids = [f"d{d}-p{p:04d}" for p in range(args.prompts)]
        discrimination = rng.lognormal(0.0, 0.5, args.prompts)
        chosen = [(d * SYSTEMS_PER_DATASET_FIT + k) % args.systems for k in range(per_dataset + 1)]
        for e in range(per_dataset):
            a, b = chosen[e], chosen[e + 1]
            eid = len(experiments) + 1
            experiments.append(
                {
                    "id": eid,
                    "title": f"bench {name} {a} vs {b}",
                    "dataset_name": name,
                    "dataset_fingerprint": "bench",
                    "system_a_id": a + 1,
                    "system_b_id": b + 1,
                    "backend": "imported",
                    "status": "closed",
                    "attention_checks_per_task": 0,
                    "repeats_per_task": 0,
                    "prompt_ids": prompt_ids,
                    "settings": {"source": "scripts/bench_web.py"},
                    "created_at": now,
                }
            )
            for t in range(math.ceil(args.prompts / PROMPTS_PER_TASK)):
                tid = len(tasks) + 1
                tasks.append({"id": tid, "experiment_id": eid, "index": t, "slots": 3, "claimed": 3, "completed": 3})
                task_items = []
                for p in range(t * PROMPTS_PER_TASK, min(args.prompts, (t + 1) * PROMPTS_PER_TASK)):
                    iid = len(items) + 1
                    task_items.append((iid, p))
                    context = [{"role": "user", "content": f"Question {p} of set {d}: what do you think?"}]
                    items.append(
                        {
                            "id": iid,
                            "experiment_id": eid,
                            "task_id": tid,
                            "prompt_id": prompt_ids[p],
                            "context": context,
                        }
                    )
                for slot in range(RATERS_PER_PROMPT):
                    rater = (eid * 7 + t * 3 + slot) % len(raters) + 1
                    aid = len(assignments) + 1
                    assignments.append(
                        {
                            "id": aid,
                            "experiment_id": eid,
                            "task_id": tid,
                            "rater_id": rater,
                            "status": "approved",
                            "seconds_on_task": 60.0,
                            "started_at": now,
                        }
                    )
                    for iid, p in task_items:
                        gap = discrimination[p] * (ability[a] - ability[b])
                        win = 0.8 / (1.0 + math.exp(-gap))
                        draw = rng.random()
                        outcome = "A" if draw < win else "B" if draw < 0.8 else "tie"
                        ratings.append(
                            {
                                "id": len(ratings) + 1,
                                "experiment_id": eid,
                                "item_id": iid,
                                "assignment_id": aid,
                                "rater_id": rater,
                                "outcome": outcome,
                                "created_at": now,
                            }
                        )
    for model, rows in (
        ("Experiment", experiments),
        ("Task", tasks),
        ("ExperimentItem", items),
        ("Assignment", assignments),
        ("Rating", ratings),
    ):
        table = tables[model].__table__
        defaults = {
            c.name: c.default.arg for c in table.columns if c.default is not None and not callable(c.default.arg)
        }
        full = [{**defaults, **row} for row in rows]
        for start in range(0, len(full), 5000):
            session.execute(sa.insert(table), full[start : start + 5000])
    print(f"seeded {len(experiments)} experiments, {len(ratings)} judgements", flush=True)
    return {"experiment_id": experiments[0]["id"], "rater_id": assignments[0]["rater_id"]}
