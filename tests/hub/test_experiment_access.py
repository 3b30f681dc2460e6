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
