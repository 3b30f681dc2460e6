"""Mechanical Turk through botocore's Stubber: every request is checked against the real service model (and,
where given, against the exact parameters), every response has the real shape. No credentials, no network."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import ANY, Stubber
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub import settings, storage
from hub.errors import Conflict, UnprocessableInput
from hub.models import (
    Assignment,
    AssignmentStatus,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    ItemKind,
    Rater,
    Rating,
    Submission,
    SubmissionStatus,
    System,
    Task,
)
from hub.services.human import assignments, experiments, mturk, raters
from tests.hub.conftest import DATASET, new_experiment

BASELINES = Path(__file__).resolve().parents[2] / "baselines" / DATASET
SCHEMA = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
PUBLIC_URL = "https://hub.example.org"
DEFAULT_QUALIFICATIONS = [
    {
        "QualificationTypeId": "00000000000000000071",
        "Comparator": "EqualTo",
        "LocaleValues": [{"Country": "US"}],
        "ActionsGuarded": "Accept",
    },
    {
        "QualificationTypeId": "000000000000000000L0",
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [95],
        "ActionsGuarded": "Accept",
    },
    {
        "QualificationTypeId": "00000000000000000040",
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [100],
        "ActionsGuarded": "Accept",
    },
]


def hit_id(n: int) -> str:
    return f"3HIT{n:026d}"  # MTurk ids: 30 upper-case letters and digits


def assignment_id(n: int) -> str:
    return f"3ASG{n:026d}"


def worker_id(n: int) -> str:
    return f"A{n:03d}WORKERXYZ9"


# --- fixtures ---------------------------------------------------------------------------------------------------


def make_systems(engine) -> dict[str, int]:
    """Echo and retrieval on hub-open-v1 as evaluated baselines, without scoring them (experiments need only
    their responses); name -> system id."""
    dataset = load_dataset(DATASET)
    ids = {}
    with Session(engine) as session:
        for name in ("echo", "retrieval"):
            system = System(name=name, is_baseline=True, is_public=True)
            session.add(system)
            session.commit()
            session.add(
                Submission(
                    system_id=system.id,
                    dataset_name=DATASET,
                    dataset_fingerprint=dataset.fingerprint,
                    responses_sha256=storage.get_storage().put((BASELINES / f"{name}.txt").read_bytes()),
                    status=SubmissionStatus.evaluated,
                )
            )
            session.commit()
            ids[name] = system.id
    return ids


@contextmanager
def stubbed_client():
    """A real mturk client (sandbox endpoint, fake keys) whose every call is answered by the Stubber; on leaving,
    every queued response must have been used."""
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        endpoint_url=mturk.SANDBOX_ENDPOINT,
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def systems(hub_env) -> dict[str, int]:
    return make_systems(hub_env)


@pytest.fixture
def https_hub(hub_env, monkeypatch):
    monkeypatch.setenv("HUB_PUBLIC_URL", PUBLIC_URL)
    settings.get_settings.cache_clear()
    yield
    settings.get_settings.cache_clear()


@pytest.fixture
def stubbed():
    with stubbed_client() as pair:
        yield pair


def mturk_experiment(engine, admin, systems, prompts=25, **options):
    ids = load_dataset(DATASET).prompt_ids[:prompts]
    return new_experiment(engine, admin, systems, launch=False, backend="mturk", prompt_ids=ids, **options)


def tasks_of(session, experiment_id) -> list[Task]:
    return list(session.exec(select(Task).where(Task.experiment_id == experiment_id).order_by(Task.index)))


def real_pairs(session, task) -> int:
    items = session.exec(select(ExperimentItem).where(ExperimentItem.task_id == task.id)).all()
    return sum(1 for i in items if i.kind == ItemKind.pair)


def hit_response(hit: str, **fields) -> dict:
    return {
        "HIT": {
            "HITId": hit,
            "HITTypeId": "3TYPE" + hit[5:],
            "HITGroupId": "3GRP" + hit[4:],
            "CreationTime": datetime(2024, 5, 1, tzinfo=UTC),
            "HITStatus": "Assignable",
            **fields,
        }
    }


def balance(stubber, available: str) -> None:
    stubber.add_response("get_account_balance", {"AvailableBalance": available, "OnHoldBalance": "0.00"}, {})


def launch(session, admin, experiment, client, sleep=None):
    return experiments.launch(
        session, admin, experiment.id, backend_launch=lambda s, e: mturk.launch_hits(s, e, client, sleep=sleep)
    )


def launched(engine, admin, systems, client, stubber, **options) -> Experiment:
    """An open MTurk experiment whose tasks have HITs hit_id(0), hit_id(1), ..."""
    experiment = mturk_experiment(engine, admin, systems, **options)
    with Session(engine) as session:
        balance(stubber, "10000.00")
        for task in tasks_of(session, experiment.id):
            stubber.add_response("create_hit", hit_response(hit_id(task.index)), {"UniqueRequestToken": ANY, **_any()})
        experiment = launch(session, admin, experiment, client)
        session.expunge(experiment)
    stubber.assert_no_pending_responses()
    return experiment


def _any() -> dict:
    keys = (
        "MaxAssignments AutoApprovalDelayInSeconds LifetimeInSeconds AssignmentDurationInSeconds Reward Title "
        "Keywords Description Question RequesterAnnotation QualificationRequirements"
    )
    return dict.fromkeys(keys.split(), ANY)


# --- pure parts ---------------------------------------------------------------------------------------------


def test_external_question_is_valid_xml_with_the_url_escaped():
    url = "https://hub.example.org/mturk/experiments/7/task?a=1&b=<2>"
    xml = mturk.external_question_xml(url, frame_height=640)
    root = ET.fromstring(xml.encode())
    assert root.tag == f"{{{SCHEMA}}}ExternalQuestion"
    assert root.find(f"{{{SCHEMA}}}ExternalURL").text == url  # escaped in the XML, the same URL once parsed
    assert root.find(f"{{{SCHEMA}}}FrameHeight").text == "640"
    assert "&amp;" in xml and "<2>" not in xml


def test_qualification_defaults_and_options():
    assert mturk.qualification_requirements({}) == DEFAULT_QUALIFICATIONS
    custom = mturk.qualification_requirements({"countries": ["US", "GB"], "min_approval_rate": 0})
    assert [q["QualificationTypeId"] for q in custom] == ["00000000000000000071", "00000000000000000040"]
    assert custom[0]["Comparator"] == "In" and custom[0]["LocaleValues"] == [{"Country": "US"}, {"Country": "GB"}]
    assert mturk.qualification_requirements({"countries": [], "min_approval_rate": 0, "min_approved_hits": 0}) == []
    for bad in ({"countries": ["usa"]}, {"min_approval_rate": 101}, {"typo": 1}):
        with pytest.raises(UnprocessableInput):
            mturk.mturk_options(
                Experiment(
                    dataset_name="d", dataset_fingerprint="f", system_a_id=1, system_b_id=2, settings={"mturk": bad}
                )
            )


def test_client_uses_the_endpoint_of_the_settings_and_retries():
    sandbox = mturk.mturk_client(settings.HubSettings(mturk_sandbox=True))
    production = mturk.mturk_client(settings.HubSettings(mturk_sandbox=False))
    assert sandbox.meta.endpoint_url == "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
    assert production.meta.endpoint_url == "https://mturk-requester.us-east-1.amazonaws.com"
    assert sandbox.meta.region_name == "us-east-1"
    assert sandbox.meta.config.retries["mode"] == "adaptive" and sandbox.meta.config.retries["total_max_attempts"] > 1


def test_hit_reward_is_whole_cents():
    experiment = Experiment(dataset_name="d", dataset_fingerprint="f", system_a_id=1, system_b_id=2)
    assert f"{mturk.hit_reward(experiment, 10):.2f}" == "0.10"
    experiment.reward_microusd = 15_000  # $0.015 x 3 = $0.045 -> 5 cents, rounded half up
    assert f"{mturk.hit_reward(experiment, 3):.2f}" == "0.05"


def _throttle(code="ThrottlingException", message="Rate exceeded") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "CreateHIT")


def test_backoff_retries_throttling_with_growing_jittered_waits_then_gives_up():
    waits: list[float] = []
    calls = []

    def always_throttled():
        calls.append(1)
        raise _throttle()

    with pytest.raises(ClientError):
        mturk.with_backoff(always_throttled, sleep=waits.append, attempts=5, rng=random.Random(3))
    assert len(calls) == 5 and len(waits) == 4
    for n, wait in enumerate(waits):
        assert 0 <= wait <= min(mturk.BACKOFF_CAP_SECONDS, mturk.BACKOFF_BASE_SECONDS * 2**n)
    # A RequestError about throttling is retried; another RequestError is not.
    outcomes = iter([_throttle("RequestError", "Request was throttled"), "ok"])

    def flaky():
        result = next(outcomes)
        if isinstance(result, Exception):
            raise result
        return result

    assert mturk.with_backoff(flaky, sleep=waits.append) == "ok"
    waits.clear()

    def refused():
        raise _throttle("RequestError", "Hit 3ABC does not exist.")

    with pytest.raises(ClientError):
        mturk.with_backoff(refused, sleep=waits.append)
    assert waits == []


# --- launch ---------------------------------------------------------------------------------------------------


def test_launch_checks_the_balance_then_creates_one_exact_hit_per_task(
    hub_env, https_hub, admin_user, systems, stubbed
):
    client, stubber = stubbed
    experiment = mturk_experiment(hub_env, admin_user, systems, mturk={"lifetime_hours": 48})
    url = f"{PUBLIC_URL}/mturk/experiments/{experiment.id}/task"
    question = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<ExternalQuestion xmlns="{SCHEMA}">\n'
        f"  <ExternalURL>{url}</ExternalURL>\n"
        "  <FrameHeight>0</FrameHeight>\n"
        "</ExternalQuestion>\n"
    )
    with Session(hub_env) as session:
        tasks = tasks_of(session, experiment.id)
        assert len(tasks) == 3
        balance(stubber, "10000.00")
        for task in tasks:
            pairs = real_pairs(session, task)
            token = f"chateval-{experiment.id}-{task.id}"
            expected = {
                "MaxAssignments": 3,
                "AutoApprovalDelayInSeconds": 72 * 3600,
                "LifetimeInSeconds": 48 * 3600,
                "AssignmentDurationInSeconds": 30 * 60,
                "Reward": f"{pairs * 0.01:.2f}",  # $0.01 per real pair; checks ride along unpaid
                "Title": "Which chatbot reply is better?",
                "Keywords": "chatbot, dialogue, comparison, rating, research",
                "Description": mturk.MTurkOptions().description,
                "Question": question,
                "RequesterAnnotation": token,
                "QualificationRequirements": DEFAULT_QUALIFICATIONS,
                "UniqueRequestToken": token,
            }
            stubber.add_response("create_hit", hit_response(hit_id(task.index)), expected)
        opened = launch(session, admin_user, experiment, client)
        assert opened.status == ExperimentStatus.open
        assert [t.external_id for t in tasks_of(session, experiment.id)] == [hit_id(0), hit_id(1), hit_id(2)]
        assert opened.settings["mturk_endpoint"] == mturk.SANDBOX_ENDPOINT
        # The title shown to workers does not name the systems being compared.
        assert "echo" not in mturk.MTurkOptions().title


def test_launch_is_refused_when_the_balance_is_below_the_cost(hub_env, https_hub, admin_user, systems, stubbed):
    client, stubber = stubbed
    experiment = mturk_experiment(hub_env, admin_user, systems)
    with Session(hub_env) as session:
        cost = Decimal(str(experiments.experiment_cost(session, experiment).total_usd))
        balance(stubber, f"{cost - Decimal('0.01'):.2f}")  # one cent short; no create_hit may follow
        with pytest.raises(mturk.InsufficientBalance, match=rf"\${cost - Decimal('0.01'):.2f} available.*\${cost:.2f}"):
            launch(session, admin_user, experiment, client)
        assert isinstance(mturk.InsufficientBalance("x"), Conflict)
    with Session(hub_env) as session:
        assert session.get(Experiment, experiment.id).status == ExperimentStatus.draft
        assert {t.external_id for t in tasks_of(session, experiment.id)} == {None}
        # Exactly enough is enough.
        balance(stubber, f"{cost:.2f}")
        for task in tasks_of(session, experiment.id):
            stubber.add_response("create_hit", hit_response(hit_id(task.index)), {"UniqueRequestToken": ANY, **_any()})
        assert launch(session, admin_user, experiment, client).status == ExperimentStatus.open


def test_throttling_during_launch_is_retried(hub_env, https_hub, admin_user, systems, stubbed):
    client, stubber = stubbed
    experiment = mturk_experiment(hub_env, admin_user, systems, prompts=10)
    waits: list[float] = []
    with Session(hub_env) as session:
        assert len(tasks_of(session, experiment.id)) == 1
        stubber.add_client_error("get_account_balance", "ServiceUnavailable", "Service unavailable", 503)
        balance(stubber, "100.00")
        stubber.add_client_error("create_hit", "ThrottlingException", "Rate exceeded", 400)
        stubber.add_response("create_hit", hit_response(hit_id(0)), {"UniqueRequestToken": ANY, **_any()})
        launch(session, admin_user, experiment, client, sleep=waits.append)
        assert tasks_of(session, experiment.id)[0].external_id == hit_id(0)
    assert len(waits) == 2 and all(0 <= w <= mturk.BACKOFF_BASE_SECONDS for w in waits)


def test_a_relaunch_never_duplicates_a_hit(hub_env, https_hub, admin_user, systems, stubbed):
    client, stubber = stubbed
    experiment = mturk_experiment(hub_env, admin_user, systems)
    with Session(hub_env) as session:
        tasks = tasks_of(session, experiment.id)
        tokens = [f"chateval-{experiment.id}-{t.id}" for t in tasks]
        # First try: HIT 0 is made, then MTurk refuses the next one for good.
        balance(stubber, "100.00")
        stubber.add_response("create_hit", hit_response(hit_id(0)), {**_any(), "UniqueRequestToken": tokens[0]})
        stubber.add_client_error(
            "create_hit",
            "RequestError",
            "Your account must be verified before you can create HITs.",
            expected_params={**_any(), "UniqueRequestToken": tokens[1]},
        )
        with pytest.raises(mturk.MTurkError, match="1 HIT\\(s\\) were created and kept"):
            launch(session, admin_user, experiment, client)
    with Session(hub_env) as session:
        assert session.get(Experiment, experiment.id).status == ExperimentStatus.draft
        assert [t.external_id for t in tasks_of(session, experiment.id)] == [hit_id(0), None, None]
        # Second try: task 0 is skipped. Task 1's HIT turns out to exist (a lost response): MTurk names it in its
        # error, and it is taken after checking its annotation. Task 2's error names no id: found by listing.
        balance(stubber, "100.00")
        stubber.add_client_error(
            "create_hit",
            "RequestError",
            f"There is already a HIT which exists with the same UniqueRequestToken. HIT id: {hit_id(1)}",
            expected_params={**_any(), "UniqueRequestToken": tokens[1]},
            modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
        )
        stubber.add_response("get_hit", hit_response(hit_id(1), RequesterAnnotation=tokens[1]), {"HITId": hit_id(1)})
        stubber.add_client_error(
            "create_hit",
            "RequestError",
            "The request token has already been processed.",
            expected_params={**_any(), "UniqueRequestToken": tokens[2]},
        )
        other = hit_response("3OTHER" + "0" * 24, RequesterAnnotation="someone else's HIT")["HIT"]
        mine = hit_response(hit_id(2), RequesterAnnotation=tokens[2])["HIT"]
        stubber.add_response("list_hits", {"HITs": [other], "NextToken": "page2", "NumResults": 1}, {"MaxResults": 100})
        stubber.add_response("list_hits", {"HITs": [mine], "NumResults": 1}, {"MaxResults": 100, "NextToken": "page2"})
        assert launch(session, admin_user, experiment, client).status == ExperimentStatus.open
        assert [t.external_id for t in tasks_of(session, experiment.id)] == [hit_id(0), hit_id(1), hit_id(2)]
        # Launching an open experiment again is refused before any call.
        with pytest.raises(Conflict):
            launch(session, admin_user, experiment, client)


def test_launch_needs_an_https_hub_and_an_mturk_experiment(hub_env, admin_user, systems, stubbed):
    client, _ = stubbed
    experiment = mturk_experiment(hub_env, admin_user, systems, prompts=10)
    hub_only = new_experiment(hub_env, admin_user, systems, launch=False, prompt_ids=experiment.prompt_ids)
    with Session(hub_env) as session:
        with pytest.raises(UnprocessableInput, match="HTTPS"):
            launch(session, admin_user, experiment, client)  # default public_url is http://127.0.0.1:8000
        with pytest.raises(UnprocessableInput, match="not mturk"):
            mturk.launch_hits(session, session.get(Experiment, hub_only.id), client)


# --- polling --------------------------------------------------------------------------------------------------


def work(engine, experiment, task_index: int, worker: int, assignment: int, *, submit=True) -> int:
    """A worker accepts the HIT of a task (MTurk assignment `assignment`) and, if `submit`, answers it."""
    with Session(engine) as session:
        experiment = session.get(Experiment, experiment.id)
        task = mturk.find_task_for_hit(session, experiment, hit_id(task_index))
        claimed = mturk.claim_for_worker(session, experiment, task, worker_id(worker), assignment_id(assignment))
        if submit:
            items = assignments.task_items(session, task.id)
            assignments.submit(session, claimed, {item.id: "left" for item in items})
        return claimed.id


def listed(n: int, hit: int, status="Submitted") -> dict:
    moment = datetime(2024, 5, 2, tzinfo=UTC)
    return {
        "AssignmentId": assignment_id(n),
        "WorkerId": worker_id(n),
        "HITId": hit_id(hit),
        "AssignmentStatus": status,
        "AcceptTime": moment,
        "SubmitTime": moment,
        "Answer": "<QuestionFormAnswers/>",
    }


def page(assignments_: list[dict], next_token: str | None = None) -> dict:
    response = {"NumResults": len(assignments_), "Assignments": assignments_}
    return {**response, "NextToken": next_token} if next_token else response


def status_of(engine, hub_assignment_id: int) -> AssignmentStatus:
    with Session(engine) as session:
        return session.get(Assignment, hub_assignment_id).status


def test_polling_approves_what_the_hub_holds_once_even_for_excluded_workers(
    hub_env, https_hub, admin_user, systems, stubbed
):
    client, stubber = stubbed
    experiment = launched(hub_env, admin_user, systems, client, stubber)
    done = work(hub_env, experiment, 0, worker=1, assignment=1)
    started = work(hub_env, experiment, 0, worker=2, assignment=2, submit=False)
    with Session(hub_env) as session:  # excluded, but paid: crowd workers are paid for work done
        rater = session.exec(select(Rater).where(Rater.external_id == worker_id(1))).one()
        raters.set_excluded(session, admin_user, rater.id, excluded=True, reason="failed attention checks")
    # HIT 0 lists over two pages: the hub's submitted assignment, one submitted on MTurk while the hub holds no
    # ratings for it (worker 2 did not finish here), and one the hub never saw.
    stubber.add_response(
        "list_assignments_for_hit", page([listed(1, 0)], "next"), {"HITId": hit_id(0), "MaxResults": 100}
    )
    stubber.add_response(
        "list_assignments_for_hit",
        page([listed(2, 0), listed(9, 0)]),
        {"HITId": hit_id(0), "MaxResults": 100, "NextToken": "next"},
    )
    stubber.add_response("approve_assignment", {}, {"AssignmentId": assignment_id(1)})
    for hit in (1, 2):
        stubber.add_response("list_assignments_for_hit", page([]), {"HITId": hit_id(hit), "MaxResults": 100})
    with Session(hub_env) as session:
        report = mturk.poll_experiment(session, session.get(Experiment, experiment.id), client)
    stubber.assert_no_pending_responses()
    assert (report.hits, report.approved, report.without_ratings, report.errors) == (3, 1, 2, 0)
    assert status_of(hub_env, done) == AssignmentStatus.approved
    assert status_of(hub_env, started) == AssignmentStatus.active
    # Polling again approves nothing twice, even if MTurk still lists the assignment as submitted. An assignment
    # reviewed on MTurk between listing and approving (auto-approval) is left for the next poll to record.
    meanwhile = work(hub_env, experiment, 1, worker=5, assignment=5)
    stubber.add_response("list_assignments_for_hit", page([listed(1, 0)]), {"HITId": hit_id(0), "MaxResults": 100})
    stubber.add_response("list_assignments_for_hit", page([listed(5, 1)]), {"HITId": hit_id(1), "MaxResults": 100})
    stubber.add_client_error(
        "approve_assignment",
        "RequestError",
        "This operation can be called with a status of: Submitted (1624047673908)",
        expected_params={"AssignmentId": assignment_id(5)},
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.InvalidAssignmentState"},
    )
    stubber.add_response("list_assignments_for_hit", page([]), {"HITId": hit_id(2), "MaxResults": 100})
    with Session(hub_env) as session:
        again = mturk.poll_experiment(session, session.get(Experiment, experiment.id), client)
    assert (again.approved, again.already_reviewed, again.errors) == (0, 2, 0)
    assert status_of(hub_env, meanwhile) == AssignmentStatus.submitted


def test_an_unknown_hit_and_an_error_are_counted_and_polling_goes_on(hub_env, https_hub, admin_user, systems, stubbed):
    client, stubber = stubbed
    experiment = launched(hub_env, admin_user, systems, client, stubber)
    done = work(hub_env, experiment, 2, worker=3, assignment=3)

    def snapshot():
        with Session(hub_env) as session:
            return [
                [r.model_dump() for r in session.exec(select(table))] for table in (Assignment, Rater, Rating, Task)
            ]

    before = snapshot()
    stubber.add_client_error(
        "list_assignments_for_hit",
        "RequestError",
        f"Hit {hit_id(0)} does not exist. (1624047673969)",
        expected_params={"HITId": hit_id(0), "MaxResults": 100},
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HITDoesNotExist"},
    )
    stranger = {**listed(7, 1), "HITId": "3UNKNOWN" + "0" * 22}
    stubber.add_response("list_assignments_for_hit", page([stranger]), {"HITId": hit_id(1), "MaxResults": 100})
    stubber.add_response("list_assignments_for_hit", page([listed(3, 2)]), {"HITId": hit_id(2), "MaxResults": 100})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": assignment_id(3)})
    with Session(hub_env) as session:
        report = mturk.poll_experiment(session, session.get(Experiment, experiment.id), client)
    stubber.assert_no_pending_responses()
    assert (report.hits, report.errors, report.unknown_hits, report.without_ratings, report.approved) == (3, 1, 1, 0, 1)
    after = snapshot()
    assert status_of(hub_env, done) == AssignmentStatus.approved
    # Nothing but the approved assignment's status changed: the unknown HIT touched nothing.
    assert after[1:] == before[1:]
    assert [{**a, "status": None} for a in after[0]] == [{**a, "status": None} for a in before[0]]
    # The periodic job does the same for every open MTurk experiment and counts what it reviewed.
    late = work(hub_env, experiment, 1, worker=4, assignment=4)
    stubber.add_response("list_assignments_for_hit", page([]), {"HITId": hit_id(0), "MaxResults": 100})
    stubber.add_response("list_assignments_for_hit", page([listed(4, 1)]), {"HITId": hit_id(1), "MaxResults": 100})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": assignment_id(4)})
    stubber.add_response(
        "list_assignments_for_hit", page([listed(3, 2, "Approved")]), {"HITId": hit_id(2), "MaxResults": 100}
    )
    assert mturk.poll_open_experiments(hub_env, client_factory=lambda: client) == 1
    assert status_of(hub_env, late) == AssignmentStatus.approved


def test_reject_on_exclusion_when_chosen_and_reviews_made_on_mturk_are_recorded(
    hub_env, https_hub, admin_user, systems, stubbed
):
    client, stubber = stubbed
    experiment = launched(hub_env, admin_user, systems, client, stubber, prompts=10, mturk={"reject_excluded": True})
    excluded = work(hub_env, experiment, 0, worker=1, assignment=1)
    kept = work(hub_env, experiment, 0, worker=2, assignment=2)
    auto = work(hub_env, experiment, 0, worker=3, assignment=3)
    with Session(hub_env) as session:
        rater = session.exec(select(Rater).where(Rater.external_id == worker_id(1))).one()
        raters.set_excluded(session, admin_user, rater.id, excluded=True, reason="always picked the left reply")
    stubber.add_response(
        "list_assignments_for_hit",
        page([listed(1, 0), listed(2, 0), listed(3, 0, status="Approved")]),
        {"HITId": hit_id(0), "MaxResults": 100},
    )
    stubber.add_response(
        "reject_assignment",
        {},
        {"AssignmentId": assignment_id(1), "RequesterFeedback": "always picked the left reply"},
    )
    stubber.add_response("approve_assignment", {}, {"AssignmentId": assignment_id(2)})
    with Session(hub_env) as session:
        report = mturk.poll_experiment(session, session.get(Experiment, experiment.id), client)
    assert (report.rejected, report.approved, report.synced) == (1, 1, 1)
    assert [status_of(hub_env, a) for a in (excluded, kept, auto)] == [
        AssignmentStatus.rejected,
        AssignmentStatus.approved,
        AssignmentStatus.approved,
    ]
    # Every slot of the only HIT is reviewed: the next poll makes no call at all.
    with Session(hub_env) as session:
        assert mturk.poll_experiment(session, session.get(Experiment, experiment.id), client).hits == 0


def test_returned_hits_full_hits_and_an_unreachable_mturk(hub_env, https_hub, admin_user, systems, stubbed):
    client, stubber = stubbed
    experiment = launched(hub_env, admin_user, systems, client, stubber, prompts=10)
    # A worker who returns the HIT and accepts it again keeps their one assignment, under the new MTurk id.
    first = work(hub_env, experiment, 0, worker=1, assignment=1, submit=False)
    assert work(hub_env, experiment, 0, worker=1, assignment=6, submit=False) == first
    with Session(hub_env) as session:
        assert session.get(Assignment, first).external_assignment_id == assignment_id(6)
    # The HIT's three places are held: a fourth worker is told so, and nothing is claimed for them.
    work(hub_env, experiment, 0, worker=2, assignment=2, submit=False)
    work(hub_env, experiment, 0, worker=3, assignment=3, submit=False)
    with pytest.raises(Conflict, match="every place in this HIT"):
        work(hub_env, experiment, 0, worker=4, assignment=4, submit=False)
    with Session(hub_env) as session:
        assert len(session.exec(select(Assignment).where(Assignment.experiment_id == experiment.id)).all()) == 3

    # No answer at all from MTurk (network, credentials): counted as an error, the job does not crash.
    class Unreachable:
        def list_assignments_for_hit(self, **_):
            raise EndpointConnectionError(endpoint_url=mturk.SANDBOX_ENDPOINT)

    with Session(hub_env) as session:
        report = mturk.poll_experiment(session, session.get(Experiment, experiment.id), Unreachable())
    assert (report.hits, report.errors) == (1, 1) and "EndpointConnectionError" in report.messages[0]


def test_no_client_is_made_when_no_mturk_experiment_is_open(hub_env):
    def factory():
        raise AssertionError("no client needed")

    assert mturk.poll_open_experiments(hub_env, client_factory=factory) == 0


# --- blocking -------------------------------------------------------------------------------------------------


def test_excluding_a_worker_can_block_them_on_mturk(hub_env, https_hub, admin_user, systems, stubbed):
    client, stubber = stubbed
    with Session(hub_env) as session:
        worker = raters.rater_for(session, "mturk", worker_id(5))
        volunteer = raters.rater_for(session, "hub", "invite:1")
        stubber.add_client_error(
            "create_worker_block",
            "RequestError",
            "Internal failure",
            expected_params={"WorkerId": worker_id(5), "Reason": "random answers"},
        )
        with pytest.raises(mturk.MTurkError):
            raters.set_excluded(
                session,
                admin_user,
                worker.id,
                excluded=True,
                reason="random answers",
                block=mturk.worker_blocker(client),
            )
        session.rollback()
        assert not session.get(Rater, worker.id).blocked
        stubber.add_response("create_worker_block", {}, {"WorkerId": worker_id(5), "Reason": "random answers"})
        blocked = raters.set_excluded(
            session, admin_user, worker.id, excluded=True, reason="random answers", block=mturk.worker_blocker(client)
        )
        assert blocked.excluded and blocked.blocked
        # Excluding again does not block twice (no stubbed call left would fail).
        raters.set_excluded(
            session, admin_user, worker.id, excluded=True, reason="still random", block=mturk.worker_blocker(client)
        )
        with pytest.raises(UnprocessableInput, match="not a Mechanical Turk worker"):
            mturk.block_worker(client, volunteer, "no")


def test_the_exclusion_routes_build_a_client_only_to_block(hub_env, admin_user, stubbed, monkeypatch):
    """A hub without MTurk credentials can exclude raters: the client is built only when asked to block."""
    from hub.web.routes.api_experiments import _blocker

    client, stubber = stubbed
    built = []
    monkeypatch.setattr(mturk, "mturk_client", lambda: built.append(client) or client)
    assert _blocker(False) is None and built == []
    with Session(hub_env) as session:
        worker = raters.rater_for(session, "mturk", worker_id(6))
        stubber.add_response("create_worker_block", {}, {"WorkerId": worker_id(6), "Reason": "copied answers"})
        rater = raters.set_excluded(
            session, admin_user, worker.id, excluded=True, reason="copied answers", block=_blocker(True)
        )
        assert rater.excluded and rater.blocked
    assert built == [client]
