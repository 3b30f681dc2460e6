"""Published statistics identify systems by id, never by name: a researcher's public system that carries a
baseline's name (a row from before names had to be unique) keeps its own IRT row, pairs, profile and download rows,
and the baseline keeps its flag and its profile; the offline refit keeps them apart too."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import load_dataset
from hub.models import ItemKind, User
from hub.services.human import assignments, experiments, raters
from hub.services.statistics import irt_fits
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, submitted_system

TRUTH = {"baseline": -1.0, "researcher": 1.5, "retrieval": 0.0}
SIDE = {"A": ("left", "right"), "B": ("right", "left")}
PROMPTS = 16
RATERS = 2
BOOTSTRAP = 20


def _draw(rng: np.random.Generator, gap: float, tau: float = 0.5) -> str:
    p_a, p_b = 1 / (1 + np.exp(-(gap - tau))), 1 / (1 + np.exp(gap + tau))
    return str(rng.choice(["A", "B", "tie"], p=[p_a, p_b, 1 - p_a - p_b]))


def _rate(session: Session, admin: User, experiment, gap: float, rng, prefix: str) -> int:
    """Every task judged by RATERS raters; an admin then reviews them (counted: the screening may flag raters
    who answer in no time, and a flagged rater's judgements wait for that decision)."""
    judged = 0
    for r in range(RATERS):
        rater = raters.rater_for(session, "hub", f"{prefix}-{r}")
        while (assignment := assignments.claim_task(session, experiment, rater)) is not None:
            choices = {}
            for item in assignments.task_items(session, assignment.task_id):
                outcome = item.expected or _draw(rng, gap)
                choices[item.id] = "tie" if outcome == "tie" else SIDE[outcome][0 if item.left_is_a else 1]
                judged += item.kind == ItemKind.pair
            assignments.submit(session, assignment, choices)
        raters.set_excluded(session, admin, rater.id, excluded=False)
    return judged


@pytest.fixture
def two_echoes(hub_env, admin_user, baselines):
    """The echo baseline and a researcher's public system also named `echo`, each judged against retrieval."""
    dataset = load_dataset(DATASET)
    rng = np.random.default_rng(11)
    with Session(hub_env) as session:
        researcher = submitted_system(session, "echo", admin_user.id, False, [p.references[0] for p in dataset.prompts])
        # Made public behind the model's back, as rows from before public names had to be unique are.
        session.exec(sa.text("UPDATE system SET is_public = true WHERE id = :id").bindparams(id=researcher.id))
        session.commit()
        ids = {"baseline": baselines["echo"], "researcher": researcher.id, "retrieval": baselines["retrieval"]}
        admin = session.get(User, admin_user.id)
        judged = {}
        for index, who in enumerate(("baseline", "researcher")):
            form = experiments.ExperimentForm(
                dataset=DATASET,
                system_a_id=ids[who],
                system_b_id=ids["retrieval"],
                prompt_ids=dataset.prompt_ids[:PROMPTS],
                raters_per_prompt=RATERS,
                seed=index,
            )
            experiment = experiments.create_experiment(session, admin, form, get_storage())
            experiment = experiments.launch(session, admin, experiment.id)
            judged[who] = _rate(session, admin, experiment, TRUTH[who] - TRUTH["retrieval"], rng, who)
    assert irt_fits.refit(hub_env, DATASET, bootstrap=BOOTSTRAP) is not None
    with TestClient(create_app()) as client:
        yield client, ids, judged


def test_two_public_systems_named_echo_keep_separate_irt_rows_flags_and_profiles(two_echoes):
    client, ids, judged = two_echoes
    fit = client.get(f"/api/irt/{DATASET}").json()["fit"]
    rows = {row["system_id"]: row for row in fit["systems"]}
    assert set(rows) == set(ids.values())
    assert rows[ids["baseline"]]["system"] == rows[ids["researcher"]]["system"] == "echo"
    assert rows[ids["baseline"]]["is_baseline"] and not rows[ids["researcher"]]["is_baseline"]
    assert rows[ids["baseline"]]["judgements"] == judged["baseline"]
    assert rows[ids["researcher"]]["judgements"] == judged["researcher"]
    assert rows[ids["researcher"]]["ability"] > rows[ids["retrieval"]]["ability"] > rows[ids["baseline"]]["ability"]
    assert fit["anchor_id"] == ids["baseline"]  # the first baseline, by id: not the researcher's namesake
    pair_ids = {frozenset((p["system_a_id"], p["system_b_id"])) for p in fit["pairs"]}
    assert pair_ids == {
        frozenset((ids["baseline"], ids["researcher"])),
        frozenset((ids["baseline"], ids["retrieval"])),
        frozenset((ids["researcher"], ids["retrieval"])),
    }
    for who in ("baseline", "researcher"):
        (result,) = client.get(f"/api/systems/{ids[who]}").json()["irt"]
        assert result["system"]["system_id"] == ids[who]
        others = {c["other"]["system_id"] for c in result["comparisons"]}
        assert others == set(ids.values()) - {ids[who]}
    page = client.get(f"/irt/{DATASET}", headers={"Accept": "text/html"}).text
    for who in ("baseline", "researcher"):  # the page tells the namesakes apart
        assert f'href="/systems/{ids[who]}">echo (#{ids[who]})</a>' in page
    systems = list(csv.DictReader(io.StringIO(client.get("/api/downloads/irt_systems.csv").text)))
    assert sorted(int(r["system_id"]) for r in systems) == sorted(ids.values())
    lines = client.get("/api/downloads/irt_pairs.jsonl").text.splitlines()
    header, pairs = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert {"system_a_id", "system_b_id", "system_a", "system_b"} <= set(header["fields"])
    assert {frozenset((p["system_a_id"], p["system_b_id"])) for p in pairs} == pair_ids


def test_the_offline_refit_keeps_namesakes_apart_and_takes_the_anchor_by_id(two_echoes, tmp_path, run_cli):
    client, ids, _ = two_echoes
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(client.get("/api/downloads/ratings.jsonl").text, encoding="utf-8")
    ambiguous = run_cli("irt", "fit", "--ratings", ratings, "--dataset", DATASET, "--anchor", "echo", "--no-progress")
    assert ambiguous.exit_code == 3
    assert "'echo' names 2 systems" in ambiguous.stderr and str(ids["researcher"]) in ambiguous.stderr
    out = tmp_path / "refit.json"
    result = run_cli(
        "irt", "fit", "--ratings", ratings, "--dataset", DATASET, "--anchor", ids["baseline"],
        "--bootstrap", BOOTSTRAP, "--out", out, "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    refit = json.loads(out.read_text())
    assert refit["anchor_id"] == ids["baseline"] and refit["anchor"] == "echo"
    published = {row["system_id"]: row for row in client.get(f"/api/irt/{DATASET}").json()["fit"]["systems"]}
    assert {row["system_id"] for row in refit["systems"]} == set(published)
    for row in refit["systems"]:
        assert row["ability"] == published[row["system_id"]]["ability"]
        assert row["interval"] == published[row["system_id"]]["interval"]
