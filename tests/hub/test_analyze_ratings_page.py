"""The README's promise, checked against the hub itself: `scripts/analyze_ratings.py` run on the public ratings
download reproduces the experiment page's numbers (GET /api/experiments/{id}): wins / ties / losses, win rates and
their intervals, the sign test, Cohen's and Fleiss' kappa with and without the excluded rater, the admin's rater
screening table (all but the burst count and flag, which rest on client addresses the download never carries) and the
judgements held out while a flagged rater awaits an admin's decision.

Four hub raters share the tasks (three per task) of echo vs retrieval: two careful raters who mostly agree, one who
prefers ties, and a random clicker who fails attention checks, answers repeats inconsistently and is then excluded.
"""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import analyze_ratings
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import load_dataset
from evaluation.rater_quality import BURST_FLAG_CODE
from hub.models import Experiment, ItemKind, Rater
from hub.services.human import assignments, raters
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, human_paced, new_experiment

PROMPTS = 24
RATERS = ("careful-1", "careful-2", "tie-lover", "clicker")
EXCLUDED = "clicker"
SIDE = {"A": ("left", "right"), "B": ("right", "left")}


def _answer(who: str, kind: ItemKind, expected: str | None, truth: str, first: str | None, rng: random.Random) -> str:
    """The outcome (A, B or tie) `who` gives; `first` is their earlier answer to the same prompt (for a repeat)."""
    if kind in (ItemKind.attention, ItemKind.known_answer):
        return rng.choice("AB") if who == EXCLUDED else str(expected)
    if kind == ItemKind.repeat and first is not None:
        return rng.choice(["A", "B", "tie"]) if who == EXCLUDED else first
    if who == EXCLUDED:
        return rng.choice(["A", "B", "tie"])
    if who == "tie-lover":
        return "tie" if rng.random() < 0.6 else truth
    return truth if rng.random() < 0.8 else rng.choice(["A", "B", "tie"])


def _rate(engine, experiment_id: int, seed: int = 11) -> int:
    """The raters take turns claiming a task until none is left; returns how many tasks were submitted."""
    rng = random.Random(seed)
    truth: dict[str, str] = {}
    given: dict[tuple[str, str], str] = {}
    submitted = 0
    idle = 0
    for who in itertools.cycle(RATERS):
        with Session(engine) as session:
            experiment = session.get(Experiment, experiment_id)
            assignment = assignments.claim_task(session, experiment, raters.rater_for(session, "hub", who))
            if assignment is None:
                idle += 1
                if idle == len(RATERS):
                    return submitted
                continue
            idle = 0
            choices = {}
            for item in assignments.task_items(session, assignment.task_id):
                majority = truth.setdefault(item.prompt_id, rng.choices(["A", "B", "tie"], [0.5, 0.3, 0.2])[0])
                outcome = _answer(who, item.kind, item.expected, majority, given.get((who, item.prompt_id)), rng)
                if item.kind in (ItemKind.pair, ItemKind.repeat):
                    given.setdefault((who, item.prompt_id), outcome)
                choices[item.id] = "tie" if outcome == "tie" else SIDE[outcome][0 if item.left_is_a else 1]
            human_paced(assignment)
            assignments.submit(session, assignment, choices)
            submitted += 1
    raise AssertionError("unreachable")


def _close(got, want, where: str = "") -> None:
    """Equal, floats to 1e-9 (NaN equals NaN)."""
    if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=0, abs=1e-9), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for key in want:
            _close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for index, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{where}[{index}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _without_client_bursts(screening: list[dict]) -> list[dict]:
    """The admin's screening table less what rests on raters' client addresses: the `client_burst` count and the
    burst flag (its entry in the aligned `flags` and `flag_codes`). The download never carries them (the count links
    raters created from one client), so the script cannot recompute them; every other key is compared."""
    table = []
    for quality in screening:
        kept = [i for i, code in enumerate(quality["flag_codes"]) if code != BURST_FLAG_CODE]
        row = {key: value for key, value in quality.items() if key != BURST_FLAG_CODE}
        row["flags"] = [quality["flags"][i] for i in kept]
        row["flag_codes"] = [quality["flag_codes"][i] for i in kept]
        table.append(row)
    return table


def _check_page_against_download(client, token: str, experiment_id: int, folder: Path) -> tuple[dict, object]:
    """The script's figures from each download format equal the page's; returns the page and the JSONL report."""
    page = client.get(f"/api/experiments/{experiment_id}", headers=auth(token))
    assert page.status_code == 200, page.text
    page = page.json()
    reports = []
    for fmt in ("jsonl", "csv"):
        download = client.get(f"/api/downloads/ratings.{fmt}")
        assert download.status_code == 200, download.text
        path = folder / f"ratings.{fmt}"
        path.write_bytes(download.content)
        mine = [r for r in analyze_ratings.read_ratings(path) if r.experiment == str(experiment_id)]
        assert mine, f"experiment {experiment_id} is not in the {fmt} download"
        report = analyze_ratings.analyze(mine)
        _close(report.results_without_excluded.to_dict(), page["summary"], f"{fmt}: summary")
        _close(report.results.to_dict(), page["summary_all_raters"], f"{fmt}: summary_all_raters")
        _close(report.agreement.to_dict(), page["agreement"], f"{fmt}: agreement")
        # client_burst (count and flag) is not compared: an admin-only signal from client addresses, not downloadable
        _close([q.to_dict() for q in report.screening], _without_client_bursts(page["raters"]), f"{fmt}: raters")
        assert report.automatic_ties == page["progress"]["auto_ties"]
        assert report.held_out == {k: page["held_out"][k] for k in ("raters", "judgements")}, fmt
        reports.append(report)
    return page, reports[0]


def test_the_script_reproduces_the_experiment_page_from_the_ratings_download(
    hub_env, people, admin_user, baselines, tmp_path
):
    prompt_ids = load_dataset(DATASET).prompt_ids[:PROMPTS]
    experiment = new_experiment(
        hub_env,
        admin_user,
        baselines,
        prompt_ids=prompt_ids,
        prompts_per_task=6,
        raters_per_prompt=3,
        attention_checks_per_task=1,
        repeats_per_task=1,
    )
    assert _rate(hub_env, experiment.id) > 0
    with TestClient(create_app()) as client:
        before, report = _check_page_against_download(client, people["admin"], experiment.id, tmp_path)
        assert before["excluded_raters"] == 0
        rows = analyze_ratings.read_ratings(tmp_path / "ratings.jsonl")
        kinds = {r.kind for r in rows if r.experiment == str(experiment.id)}
        assert kinds >= {"pair", "attention", "repeat"}
        summary = before["summary"]
        assert summary["wins"] and summary["ties"] and summary["losses"]  # varied answers, not one outcome
        assert len(before["raters"]) == len(RATERS)

        with Session(hub_env) as session:
            clicker = raters.rater_for(session, "hub", EXCLUDED)
            raters.set_excluded(session, admin_user, clicker.id, excluded=True, reason="random clicks")
            assert session.get(Rater, clicker.id).excluded

        after, report = _check_page_against_download(client, people["admin"], experiment.id, tmp_path)
        assert after["excluded_raters"] == 1
        agree = after["agreement"]
        assert agree["excluded_judgements"] > 0
        assert agree["without_excluded"]["n_raters"] == agree["with_excluded"]["n_raters"] - 1
        assert after["summary"]["n"] < after["summary_all_raters"]["n"]
        assert after["summary_all_raters"] == before["summary_all_raters"]
        for figures in (agree["with_excluded"], agree["without_excluded"]):
            assert figures["cohen_kappa"] is not None and figures["fleiss_kappa"] is not None
        assert {q.rater for q in report.screening if q.excluded} == {clicker.public_hash}
