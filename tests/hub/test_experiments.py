"""Experiments: creation (automatic ties, seeded sides, checks scattered in blocks), cost, handing out tasks and
taking ratings back, including the abuse cases of the issue."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from hub import storage
from hub.errors import Conflict, Forbidden, UnprocessableInput
from hub.models import (
    Assignment,
    AssignmentStatus,
    Experiment,
    ExperimentItem,
    ItemKind,
    Rating,
    Submission,
    SubmissionStatus,
    System,
    Task,
)
from hub.services.human import assignments, experiment_items, experiments, human_pipeline, raters
from tests.hub.conftest import DATASET, new_experiment


def test_the_cost_estimate_of_the_chateval_protocol_is_7_dollars_20():
    cost = experiments.cost_estimate(
        200, raters=3, reward_microusd=10_000, fee_percent=20, checks_per_task=2, prompts_per_task=10
    )
    assert (cost.judgements, cost.rewards_usd, cost.fee_usd, cost.total_usd) == (600, 6.0, 1.2, 7.2)
    assert cost.check_judgements == 20 * 2 * 3  # shown, not paid


def _items(engine, experiment_id):
    with Session(engine) as session:
        return session.exec(select(ExperimentItem).where(ExperimentItem.experiment_id == experiment_id)).all()


def test_creation_builds_blocks_with_seeded_sides_and_scattered_checks(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines, launch=False)
    items = _items(hub_env, experiment.id)
    pairs = [i for i in items if i.kind == ItemKind.pair]
    assert len(pairs) + sum(i.auto_tie for i in items) == 120
    by_task = Counter(i.task_id for i in pairs)
    assert max(by_task.values()) == 10 and len(by_task) == 12
    sides = Counter(i.left_is_a for i in pairs)
    assert 35 <= sides[True] <= 85  # random, not all one side
    checks = [i for i in items if i.kind == ItemKind.attention]
    repeats = [i for i in items if i.kind == ItemKind.repeat]
    assert len(checks) == 12 and len(repeats) == 12
    # Checks sit anywhere in their block, not always last.
    positions = {i.position for i in checks}
    assert len(positions) > 3
    for check in checks:
        assert check.expected == "A" and check.left_text != check.right_text
    for repeat in repeats:
        original = next(i for i in pairs if i.id == repeat.repeat_of_id)
        assert (repeat.left_text, repeat.right_text) == (original.right_text, original.left_text)
    # The same seed builds the same experiment.
    again = new_experiment(hub_env, admin_user, baselines, launch=False)
    assert [(i.prompt_id, i.left_is_a, i.kind, i.position) for i in _items(hub_env, again.id)] == [
        (i.prompt_id, i.left_is_a, i.kind, i.position) for i in items
    ]


def test_identical_responses_become_automatic_ties_never_shown(hub_env, admin_user, baselines):
    # A copy of echo that differs from it on the first 20 prompts only.
    with Session(hub_env) as session:
        echo = session.exec(select(Submission).where(Submission.system_id == baselines["echo"])).one()
        lines = storage.get_storage().get(echo.responses_sha256).decode().splitlines()
        lines[:20] = [f"a different answer {i}" for i in range(20)]
        system = System(name="echo-ish", is_public=True, is_baseline=True)
        session.add(system)
        session.commit()
        session.add(
            Submission(
                system_id=system.id,
                dataset_name=DATASET,
                dataset_fingerprint=echo.dataset_fingerprint,
                responses_sha256=storage.get_storage().put(("\n".join(lines) + "\n").encode()),
                status=SubmissionStatus.evaluated,
            )
        )
        session.commit()
        ids = {"echo": baselines["echo"], "retrieval": system.id}
    experiment = new_experiment(hub_env, admin_user, ids, launch=False)
    items = _items(hub_env, experiment.id)
    ties = [i for i in items if i.auto_tie]
    assert len(ties) == 100 and all(i.task_id is None for i in ties)
    with Session(hub_env) as session:
        auto = session.exec(select(Rating).where(Rating.experiment_id == experiment.id, Rating.auto_tie)).all()
        assert len(auto) == 100 and {r.outcome for r in auto} == {"tie"} and {r.rater_id for r in auto} == {None}
        assert experiments.experiment_cost(session, session.get(Experiment, experiment.id)).judgements == 20 * 3


def test_creation_refuses_bad_forms(hub_env, admin_user, baselines):
    with Session(hub_env) as session:
        bad = experiments.ExperimentForm(dataset=DATASET, system_a_id=baselines["echo"], system_b_id=baselines["echo"])
        with pytest.raises(UnprocessableInput, match="must differ"):
            experiments.create_experiment(session, admin_user, bad, storage.get_storage())
        unknown = experiments.ExperimentForm(
            dataset=DATASET, system_a_id=baselines["echo"], system_b_id=baselines["retrieval"], prompt_ids=["nope"]
        )
        with pytest.raises(UnprocessableInput, match="not in the dataset"):
            experiments.create_experiment(session, admin_user, unknown, storage.get_storage())
        assert session.exec(select(Experiment)).all() == []


def _answer_all(session, assignment, choice="left"):
    return {item.id: choice for item in assignments.task_items(session, assignment.task_id)}


def test_a_task_goes_to_at_most_its_slots_and_never_twice_to_a_rater(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines, prompts_per_task=60, raters_per_prompt=2)
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        people = [raters.rater_for(session, "hub", f"r{i}") for i in range(5)]
        claimed = [assignments.claim_task(session, experiment, r) for r in people]
        # Two tasks x two slots: four raters get one, the fifth nothing.
        assert [a is not None for a in claimed] == [True, True, True, True, False]
        assert {t.claimed for t in session.exec(select(Task).where(Task.experiment_id == experiment.id))} == {2}
        # Asking again resumes the unfinished assignment instead of taking another slot.
        assert assignments.claim_task(session, experiment, people[0]).id == claimed[0].id
        first = claimed[0]
        assignments.submit(session, first, _answer_all(session, first))
        again = assignments.claim_task(session, experiment, people[0])
        assert again is None or again.task_id != first.task_id


def test_an_abandoned_task_is_released_after_the_timeout(hub_env, admin_user, baselines):
    experiment = new_experiment(
        hub_env, admin_user, baselines, prompt_ids=["hov1-001", "hov1-002"], raters_per_prompt=1
    )
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        slow, other = raters.rater_for(session, "hub", "slow"), raters.rater_for(session, "hub", "other")
        taken = assignments.claim_task(session, experiment, slow)
        assert assignments.claim_task(session, experiment, other) is None
        taken.expires_at = taken.started_at - timedelta(seconds=1)
        session.add(taken)
        session.commit()
        given = assignments.claim_task(session, experiment, other)
        assert given is not None and given.task_id == taken.task_id
        session.refresh(taken)
        assert taken.status == AssignmentStatus.released
        # The slow rater's late answers are refused: the slot is gone.
        with pytest.raises(Conflict, match="timed out"):
            assignments.submit(session, taken, _answer_all(session, taken))


def test_submitting_twice_is_idempotent_and_different_answers_conflict(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        rater = raters.rater_for(session, "hub", "twice")
        assignment = assignments.claim_task(session, experiment, rater)
        answers = _answer_all(session, assignment, "tie")
        first = assignments.submit(session, assignment, answers)
        code = first.completion_code
        second = assignments.submit(session, session.get(Assignment, assignment.id), answers)
        assert second.completion_code == code
        count = len(session.exec(select(Rating).where(Rating.assignment_id == assignment.id)).all())
        assert count == len(answers)
        with pytest.raises(Conflict, match="different answers"):
            assignments.submit(session, second, {k: "left" for k in answers})


def test_a_submission_that_keeps_losing_races_gives_up_with_409_after_three_attempts(hub_env, admin_user, baselines):
    """Each time the submission moves its assignment, a racing request has just moved it first (released it, then
    put it back): the submission looks again three times, then tells the rater to retry, and writes nothing."""
    experiment = new_experiment(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        assignment = assignments.claim_task(session, experiment, raters.rater_for(session, "hub", "unlucky"))
        answers = _answer_all(session, assignment)
    flip = "UPDATE assignment SET status = CASE status WHEN 'active' THEN 'released' ELSE 'active' END WHERE id = :a"
    raced = []

    def racing_request(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("UPDATE assignment SET") and "CASE" not in statement:  # not its own flip
            with hub_env.begin() as other:
                other.execute(sa.text(flip), {"a": assignment.id})
            raced.append(statement)

    sa.event.listen(hub_env, "before_cursor_execute", racing_request)
    try:
        with Session(hub_env) as session, pytest.raises(Conflict, match="another request at the same moment") as lost:
            assignments.submit(session, session.get(Assignment, assignment.id), answers)
    finally:
        sa.event.remove(hub_env, "before_cursor_execute", racing_request)
    assert lost.value.status_code == 409
    assert len(raced) == 3
    with Session(hub_env) as session:
        assert session.exec(select(Rating).where(Rating.assignment_id == assignment.id)).all() == []
        assert session.get(Task, assignment.task_id).completed == 0
        assert session.get(Assignment, assignment.id).completion_code is None


def test_missing_forged_or_invalid_answers_are_refused_and_nothing_is_stored(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        assignment = assignments.claim_task(session, experiment, raters.rater_for(session, "hub", "x"))
        answers = _answer_all(session, assignment)
        missing = dict(list(answers.items())[1:])
        with pytest.raises(UnprocessableInput, match="not answered"):
            assignments.submit(session, assignment, missing)
        with pytest.raises(UnprocessableInput, match="not part of this task"):
            assignments.submit(session, assignment, {**answers, 999_999: "left"})
        with pytest.raises(UnprocessableInput, match="one of left, tie, right"):
            assignments.submit(session, assignment, {k: "both_good" for k in answers})
        assert session.exec(select(Rating).where(Rating.assignment_id == assignment.id)).all() == []
        assert session.get(Assignment, assignment.id).status == AssignmentStatus.active


def test_a_closed_experiment_takes_no_ratings(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        assignment = assignments.claim_task(session, experiment, raters.rater_for(session, "hub", "late"))
        human_pipeline.close(session, admin_user, experiment.id)
        with pytest.raises(Conflict, match="closed"):
            assignments.submit(session, assignment, _answer_all(session, assignment))
        with pytest.raises(Conflict, match="takes no ratings"):
            assignments.claim_task(
                session, session.get(Experiment, experiment.id), raters.rater_for(session, "hub", "y")
            )


def test_an_excluded_rater_gets_no_more_tasks_and_keeps_their_ratings(hub_env, admin_user, baselines):
    experiment = new_experiment(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        rater = raters.rater_for(session, "hub", "clicker")
        assignment = assignments.claim_task(session, experiment, rater)
        assignments.submit(session, assignment, _answer_all(session, assignment))
        with pytest.raises(UnprocessableInput, match="reason"):
            raters.set_excluded(session, admin_user, rater.id, excluded=True)
        raters.set_excluded(session, admin_user, rater.id, excluded=True, reason="always left")
        with pytest.raises(Forbidden):
            assignments.claim_task(session, experiment, session.get(type(rater), rater.id))
        assert len(session.exec(select(Rating).where(Rating.rater_id == rater.id)).all()) > 0
        back = raters.set_excluded(session, admin_user, rater.id, excluded=False)
        assert not back.excluded and back.exclusion_reason is None


def test_outcome_follows_the_side_shown():
    assert assignments.outcome_of("left", True) == "A"
    assert assignments.outcome_of("left", False) == "B"
    assert assignments.outcome_of("right", True) == "B"
    assert assignments.outcome_of("right", False) == "A"
    assert {assignments.outcome_of(c, s) for c in ("tie", "both_good", "both_bad") for s in (True, False)} == {"tie"}


def test_an_evaluated_submission_with_chosen_baselines_gets_draft_experiments(hub_env, admin_user, baselines):
    from hub.services.submissions.evaluation import EvaluationRun

    with Session(hub_env) as session:
        retrieval = session.exec(select(Submission).where(Submission.system_id == baselines["retrieval"])).one()
        system = System(name="researcher bot", is_public=True)
        session.add(system)
        session.commit()
        submission = Submission(
            system_id=system.id,
            dataset_name=DATASET,
            dataset_fingerprint=retrieval.dataset_fingerprint,
            responses_sha256=retrieval.responses_sha256,  # the same answers as retrieval: all automatic ties
            baseline_ids=[baselines["echo"], baselines["retrieval"]],
            status=SubmissionStatus.approved,
        )
        session.add(submission)
        session.commit()
        submission_id = submission.id
    assert EvaluationRun(hub_env, storage.get_storage(), submission_id).run() == SubmissionStatus.human_evaluation
    with Session(hub_env) as session:
        planned = session.exec(select(Experiment).where(Experiment.submission_id == submission_id)).all()
        assert sorted(e.system_b_id for e in planned) == sorted([baselines["echo"], baselines["retrieval"]])
        assert {e.status.value for e in planned} == {"draft"}  # no money spent before an admin launches
        for experiment in planned:
            experiments.launch(session, admin_user, experiment.id)
            human_pipeline.close(session, admin_user, experiment.id)
        assert session.get(Submission, submission_id).status == SubmissionStatus.complete


def test_known_answer_pairs_ride_in_every_task_and_count_in_the_rater_screening(hub_env, admin_user, baselines):
    from hub.services.human.experiment_results import results

    known = [
        experiment_items.KnownAnswer(prompt_id="hov1-003", better="A kind, on-topic answer.", worse="zzz qqq xxx"),
        experiment_items.KnownAnswer(prompt_id="hov1-004", better="Another careful reply.", worse="banana banana"),
    ]
    experiment = new_experiment(
        hub_env,
        admin_user,
        baselines,
        prompt_ids=[f"hov1-{i:03d}" for i in range(1, 21)],
        raters_per_prompt=1,
        attention_checks_per_task=0,
        repeats_per_task=0,
        known_answers=known,
    )
    with Session(hub_env) as session:
        items = session.exec(select(ExperimentItem).where(ExperimentItem.experiment_id == experiment.id)).all()
        checks = [i for i in items if i.kind == ItemKind.known_answer]
        tasks = {i.task_id for i in items if i.kind == ItemKind.pair}
        assert sorted(c.task_id for c in checks) == sorted(tasks)  # one per task, round-robin over the pairs given
        assert [c.prompt_id for c in sorted(checks, key=lambda c: c.task_id)] == ["hov1-003", "hov1-004"]
        for check in checks:
            pair = next(k for k in known if k.prompt_id == check.prompt_id)
            shown_better = check.left_text if check.left_is_a else check.right_text
            assert check.expected == "A" and shown_better == pair.better
        # A rater who prefers the worse response of every known pair fails the check; the other passes it.
        experiment = session.get(Experiment, experiment.id)
        for who, wrong in (("careful", False), ("careless", True)):
            rater = raters.rater_for(session, "hub", who)
            assignment = assignments.claim_task(session, experiment, rater)
            choices = {}
            for item in assignments.task_items(session, assignment.task_id):
                good = "left" if item.left_is_a else "right"
                bad = "right" if good == "left" else "left"
                choices[item.id] = (bad if wrong else good) if item.kind == ItemKind.known_answer else "tie"
            assignments.submit(session, assignment, choices)
        screened = {r["rater"]: r for r in results(session, experiment, with_raters=True)["raters"]}
        by_hash = {raters.rater_for(session, "hub", who).public_hash: who for who in ("careful", "careless")}
        accuracy = {by_hash[h]: r for h, r in screened.items()}
        assert (accuracy["careful"]["attention_checks"], accuracy["careful"]["attention_correct"]) == (1, 1)
        assert (accuracy["careless"]["attention_checks"], accuracy["careless"]["attention_correct"]) == (1, 0)


def test_planning_that_fails_after_scoring_is_finished_by_the_jobs_retry(hub_env, admin_user, baselines, monkeypatch):
    """A crash while drafting the experiments (here a storage error) leaves the submission `evaluated` with its
    scores; running the job again drafts them instead of doing nothing."""
    from hub.services.submissions.evaluation import EvaluationRun

    with Session(hub_env) as session:
        echo = session.exec(select(Submission).where(Submission.system_id == baselines["echo"])).one()
        system = System(name="retried bot", is_public=True)
        session.add(system)
        session.commit()
        submission = Submission(
            system_id=system.id,
            dataset_name=DATASET,
            dataset_fingerprint=echo.dataset_fingerprint,
            responses_sha256=echo.responses_sha256,
            baseline_ids=[baselines["retrieval"]],
            status=SubmissionStatus.approved,
        )
        session.add(submission)
        session.commit()
        submission_id = submission.id
    create = human_pipeline.create_experiment

    def storage_down(*args, **kwargs):
        raise OSError("storage unreachable")

    monkeypatch.setattr(human_pipeline, "create_experiment", storage_down)
    with pytest.raises(OSError):
        EvaluationRun(hub_env, storage.get_storage(), submission_id).run()
    with Session(hub_env) as session:
        assert session.get(Submission, submission_id).status == SubmissionStatus.evaluated
    monkeypatch.setattr(human_pipeline, "create_experiment", create)
    assert EvaluationRun(hub_env, storage.get_storage(), submission_id).run() == SubmissionStatus.human_evaluation
    with Session(hub_env) as session:
        planned = session.exec(select(Experiment).where(Experiment.submission_id == submission_id)).all()
        assert [e.system_b_id for e in planned] == [baselines["retrieval"]]


def test_a_baseline_without_responses_is_named_as_system_b(hub_env, admin_user, baselines):
    with Session(hub_env) as session:
        bare = System(name="no responses", is_baseline=True, is_public=True)
        session.add(bare)
        session.commit()
        form = experiments.ExperimentForm(dataset=DATASET, system_a_id=baselines["echo"], system_b_id=bare.id)
        with pytest.raises(UnprocessableInput, match="has no approved responses") as refused:
            experiments.create_experiment(session, admin_user, form, storage.get_storage())
        assert refused.value.field == "system_b_id"
