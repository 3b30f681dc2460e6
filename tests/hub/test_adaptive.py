"""Adaptive experiments: tasks open in rounds, and the experiment stops when the anytime-valid sequential test
decides, when its judgement budget is spent, or when its prompts run out; raters never get unreleased work."""

from __future__ import annotations

import itertools

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlmodel import Session

from evaluation.irt.sequential import SequentialTest
from hub.errors import Conflict
from hub.models import Experiment, ExperimentStatus
from hub.services.human import assignments, experiments, raters
from hub.services.human.experiments import AdaptiveOptions
from hub.web.app import create_app
from tests.hub.conftest import DATASET, new_experiment

PROMPTS, PER_TASK, ROUND = 40, 5, 2
TASKS = PROMPTS // PER_TASK
SIDE = {"A": ("left", "right"), "B": ("right", "left")}


def _adaptive(engine, admin, baselines, **options) -> Experiment:
    from evaluation.dataset import load_dataset

    return new_experiment(
        engine,
        admin,
        baselines,
        prompt_ids=load_dataset(DATASET).prompt_ids[:PROMPTS],
        prompts_per_task=PER_TASK,
        raters_per_prompt=1,
        attention_checks_per_task=0,
        repeats_per_task=0,
        adaptive=AdaptiveOptions(round_tasks=ROUND, **options),
    )


def _claim(engine, experiment_id: int, who: str):
    with Session(engine) as session:
        experiment = session.get(Experiment, experiment_id)
        return assignments.claim_task(session, experiment, raters.rater_for(session, "hub", who))


def _submit(engine, assignment, outcomes) -> None:
    """Answer every item of the assignment's task with the next outcome (A, B or tie) from `outcomes`."""
    with Session(engine) as session:
        assignment = session.merge(assignment)
        choices = {}
        for item in assignments.task_items(session, assignment.task_id):
            outcome = next(outcomes)
            choices[item.id] = "tie" if outcome == "tie" else SIDE[outcome][0 if item.left_is_a else 1]
        assignments.submit(session, assignment, choices)


def _state(engine, experiment_id: int) -> Experiment:
    with Session(engine) as session:
        experiment = session.get(Experiment, experiment_id)
        session.expunge(experiment)
        return experiment


def test_a_clear_winner_stops_the_experiment_after_the_first_round(hub_env, admin_user, baselines):
    experiment = _adaptive(hub_env, admin_user, baselines)
    assert experiment.released_tasks == ROUND
    always_a = itertools.repeat("A")
    for rater in range(ROUND):
        _submit(hub_env, _claim(hub_env, experiment.id, f"r{rater}"), always_a)
    stopped = _state(hub_env, experiment.id)
    assert stopped.status == ExperimentStatus.closed
    report = stopped.settings["adaptive"]["stopped"]
    reference = SequentialTest(alpha=0.05)
    reference.update([1] * (ROUND * PER_TASK))
    assert reference.decision == "A"
    assert report["reason"] == "decided" and report["decision"] == "A"
    assert report["judgements"] == reference.used <= ROUND * PER_TASK and report["released_tasks"] == ROUND
    with pytest.raises(Conflict, match="takes no ratings"):
        _claim(hub_env, experiment.id, "late")
    with TestClient(create_app()) as client:
        page = client.get(f"/experiments/{experiment.id}", headers={"Accept": "text/html"}).text
        assert "Adaptive stopping" in page and "echo is better" in page
        view = client.get(f"/api/experiments/{experiment.id}").json()["adaptive"]
        assert view["stopped"]["decision"] == "A" and view["total_tasks"] == TASKS


def test_rounds_open_only_when_the_previous_one_is_done_and_a_tie_runs_to_the_end(hub_env, admin_user, baselines):
    experiment = _adaptive(hub_env, admin_user, baselines)
    balanced = itertools.cycle(["A", "B"])
    for round_number in range(TASKS // ROUND):
        held = [_claim(hub_env, experiment.id, f"round{round_number}-r{r}") for r in range(ROUND)]
        assert all(held)
        # Every released task is taken: a further rater gets nothing, though unreleased tasks remain.
        assert _claim(hub_env, experiment.id, f"round{round_number}-extra") is None
        assert _state(hub_env, experiment.id).released_tasks == ROUND * (round_number + 1)
        for assignment in held:
            _submit(hub_env, assignment, balanced)
    final = _state(hub_env, experiment.id)
    assert final.status == ExperimentStatus.closed
    report = final.settings["adaptive"]["stopped"]
    assert report["reason"] == "prompts exhausted" and report["decision"] is None
    assert report["judgements"] == PROMPTS and report["released_tasks"] == TASKS


def test_the_budget_stops_an_undecided_experiment(hub_env, admin_user, baselines):
    experiment = _adaptive(hub_env, admin_user, baselines, budget_judgements=15)
    balanced = itertools.cycle(["A", "B", "tie"])
    for round_number in range(2):
        for r in range(ROUND):
            _submit(hub_env, _claim(hub_env, experiment.id, f"b{round_number}-{r}"), balanced)
    report = _state(hub_env, experiment.id).settings["adaptive"]["stopped"]
    assert report["reason"] == "budget" and report["judgements"] == 15 and report["released_tasks"] == 2 * ROUND


def test_adaptive_experiments_run_on_the_hubs_own_pages_only(baselines):
    with pytest.raises(ValidationError, match="hub's own rating pages only"):
        experiments.ExperimentForm(
            dataset=DATASET,
            system_a_id=baselines["echo"],
            system_b_id=baselines["retrieval"],
            backend="mturk",
            adaptive=AdaptiveOptions(),
        )


def test_the_admin_form_creates_an_adaptive_experiment(hub_env, admin_user, baselines):
    from tests.hub.test_pages_account import browser, form, log_in

    with browser(create_app()) as client:
        log_in(client, "admin")
        fields = {
            "dataset": DATASET,
            "system_a_id": baselines["echo"],
            "system_b_id": baselines["retrieval"],
            "prompts_per_task": PER_TASK,
            "adaptive_round_tasks": 3,
            "adaptive_budget": 30,
        }
        created = form(client, "/admin/experiments", fields, token_from="/admin/experiments")
        assert created.status_code == 303, created.text
        experiment_id = int(created.headers["location"].rsplit("/", 1)[1])
    experiment = _state(hub_env, experiment_id)
    assert experiment.released_tasks == 3
    assert experiment.settings["adaptive"]["options"] == {"round_tasks": 3, "alpha": 0.05, "budget_judgements": 30}
