"""Who sees a launched experiment that is not public: admins, and the owner of a system when the other system is
public or also theirs. A comparison of two researchers' private systems reveals neither to the other."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub.models import User
from hub.services.human import experiments
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, submitted_system


def _user(session: Session, role: str) -> User:
    return session.exec(select(User).where(User.email == f"{role}@example.org")).one()


def test_a_private_opponent_stays_hidden_from_the_other_systems_owner(hub_env, people, baselines):
    references = [p.references for p in load_dataset(DATASET).prompts]
    with Session(hub_env) as session:
        owner, other, admin = (_user(session, role) for role in ("owner", "other", "admin"))
        mine = submitted_system(session, "Mine", owner.id, False, [r[0] for r in references])
        theirs = submitted_system(session, "Theirs secret", other.id, False, [r[1] for r in references])

        def launched(a: int, b: int) -> int:
            form = experiments.ExperimentForm(dataset=DATASET, system_a_id=a, system_b_id=b, prompt_ids=["hov1-001"])
            created = experiments.create_experiment(session, admin, form, get_storage())
            return experiments.launch(session, admin, created.id).id

        against_baseline = launched(mine.id, baselines["echo"])
        against_theirs = launched(mine.id, theirs.id)
        theirs_id = theirs.id
    with TestClient(create_app()) as client:
        as_owner = auth(people["owner"])
        assert client.get(f"/api/experiments/{against_baseline}", headers=as_owner).status_code == 200
        hidden = client.get(f"/api/experiments/{against_theirs}", headers=as_owner)
        assert hidden.status_code == 404 and hidden.json()["error"] == f"no experiment #{against_theirs}"
        assert client.get(f"/api/systems/{theirs_id}", headers=as_owner).status_code == 404
        listed = client.get("/api/experiments", headers=as_owner).json()
        assert [e["id"] for e in listed] == [against_baseline] and "Theirs secret" not in str(listed)
        assert client.get(f"/api/experiments/{against_theirs}", headers=auth(people["admin"])).status_code == 200


def test_lists_decide_publicness_exactly_as_one_experiment_at_a_time(hub_env, people):
    """`public_experiment_ids` and `visible_experiments` (two queries for a whole list) agree with
    `experiment_is_public` and `can_view_experiment` (queries per experiment) for every kind of system: baselines,
    imported public systems, owned public systems with and without an approved submission on the experiment's
    dataset, private ones, and draft experiments."""
    import itertools

    from hub.models import Experiment, ExperimentStatus, Submission, SubmissionStatus, System
    from hub.services.human import experiment_access as access

    with Session(hub_env) as session:
        owner, other, admin = (_user(session, role) for role in ("owner", "other", "admin"))
        systems = [
            System(name="base", is_baseline=True),
            System(name="imported", is_public=True),
            System(name="imported private"),
            System(name="approved", owner_id=owner.id, is_public=True),
            System(name="approved elsewhere", owner_id=other.id, is_public=True),
            System(name="submitted only", owner_id=other.id, is_public=True),
            System(name="private approved", owner_id=owner.id),
        ]
        session.add_all(systems)
        session.commit()
        statuses = {
            "approved": [("d1", SubmissionStatus.evaluated)],
            "approved elsewhere": [("d2", SubmissionStatus.complete), ("d1", SubmissionStatus.rejected)],
            "submitted only": [("d1", SubmissionStatus.submitted)],
            "private approved": [("d1", SubmissionStatus.evaluated)],
        }
        for system in systems:
            for dataset, status in statuses.get(system.name, []):
                session.add(
                    Submission(
                        system_id=system.id,
                        dataset_name=dataset,
                        dataset_fingerprint="f",
                        responses_sha256="0" * 64,
                        status=status,
                    )
                )
        for (a, b), dataset, status in itertools.product(
            itertools.combinations(systems, 2), ("d1", "d2"), (ExperimentStatus.draft, ExperimentStatus.closed)
        ):
            session.add(
                Experiment(
                    dataset_name=dataset, dataset_fingerprint="f", system_a_id=a.id, system_b_id=b.id, status=status
                )
            )
        session.commit()
        experiments = list(session.exec(select(Experiment)))
        expected = {e.id for e in experiments if access.experiment_is_public(session, e)}
        assert access.public_experiment_ids(session, experiments) == expected
        assert 0 < len(expected) < len(experiments) // 2  # both answers occur
        for viewer in (None, owner, other, admin):
            one_by_one = [e.id for e in experiments if access.can_view_experiment(session, e, viewer)]
            listed = [e.id for e in access.visible_experiments(session, viewer)]
            assert listed == sorted(one_by_one, reverse=True)
