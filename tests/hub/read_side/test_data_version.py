"""The data version is bumped in the same transaction as every write that changes public pages, and only then."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from hub.models import ApiToken, Rater, Submission, System, Task
from hub.models.data_version import bump
from hub.services.accounts.accounts import create_token
from hub.services.publishing.read_side import current
from tests.hub.conftest import new_experiment, submitted_system


def version(engine) -> int:
    with Session(engine) as session:  # a separate connection: sees only what is committed
        return current(session).number


def test_a_fresh_database_starts_at_version_one(hub_env):
    assert version(hub_env) == 1


def test_a_public_write_bumps_once_in_its_transaction_and_a_rollback_undoes_it(hub_env, baselines):
    before = version(hub_env)
    with Session(hub_env) as session:
        system = session.get(System, baselines["echo"])
        system.description = "now with a description"
        session.add(system)
        session.flush()
        session.add(System(name="another", is_public=False))
        session.flush()
        assert version(hub_env) == before  # not visible to others before the commit (the same transaction)
        session.commit()
    assert version(hub_env) == before + 1  # one bump per transaction, however many flushes
    with Session(hub_env) as session:
        system = session.get(System, baselines["echo"])
        system.name = "echo renamed"
        session.add(system)
        session.flush()
        session.rollback()
    assert version(hub_env) == before + 1  # rolled back with the write


@pytest.mark.parametrize("kind", ["system name", "score deleted", "rater excluded", "experiment state"])
def test_writes_that_change_public_pages_bump(hub_env, baselines, admin_user, kind):
    experiment = new_experiment(hub_env, admin_user, baselines)
    with Session(hub_env) as session:
        session.add(Rater(backend="hub", external_id="r1", public_hash="h1"))
        session.commit()
    before = version(hub_env)
    with Session(hub_env) as session:
        if kind == "system name":
            system = session.get(System, baselines["retrieval"])
            system.name = "retrieval v2"
            session.add(system)
        elif kind == "score deleted":
            submission = session.exec(select(Submission).where(Submission.system_id == baselines["echo"])).first()
            from hub.models import Score

            session.delete(session.exec(select(Score).where(Score.submission_id == submission.id)).first())
        elif kind == "rater excluded":
            rater = session.exec(select(Rater)).one()
            rater.excluded = True
            session.add(rater)
        else:
            from hub.models import Experiment, ExperimentStatus

            row = session.get(Experiment, experiment.id)
            row.status = ExperimentStatus.closed
            session.add(row)
        session.commit()
    assert version(hub_env) == before + 1


def test_bulk_orm_statements_bump_too(hub_env, baselines, admin_user):
    experiment = new_experiment(hub_env, admin_user, baselines)
    before = version(hub_env)
    with Session(hub_env) as session:
        task_id = session.exec(select(Task.id).where(Task.experiment_id == experiment.id)).first()
        session.execute(sa.update(Task).where(Task.id == task_id).values(completed=Task.completed + 1))
        assert version(hub_env) == before
        session.commit()
    assert version(hub_env) == before + 1


def test_private_writes_do_not_bump(hub_env, baselines, admin_user):
    """Sign-in tokens, the audit log, and an evaluation's liveness columns are on no public page."""
    before = version(hub_env)
    with Session(hub_env) as session:
        create_token(session, admin_user, name="laptop")
        assert session.exec(select(ApiToken)).all()
        submission = session.exec(select(Submission)).first()
        session.execute(sa.update(Submission).where(Submission.id == submission.id).values(heartbeat_at=sa.func.now()))
        submission = session.get(Submission, submission.id)
        submission.progress = 0.5
        session.add(submission)
        session.commit()
    assert version(hub_env) == before


def test_notifications_mail_and_judging_progress_do_not_bump(hub_env, baselines, admin_user):
    """What the hub tells one person (notifications, mail, reset tokens) and a judging run's progress change
    often and show on no public page, so writing them leaves every cached public page valid."""
    from hub.models import JudgingRun, Notification, OutgoingMail

    before = version(hub_env)
    with Session(hub_env) as session:
        submission = session.exec(select(Submission)).first()
        session.add(Notification(user_id=admin_user.id, kind="submission.scored", target="x", subject="s", body="b"))
        session.add(OutgoingMail(kind="notification", to_address="admin@example.org", subject="s", body="b"))
        run = JudgingRun(submission_id=submission.id)
        session.add(run)
        session.commit()
        run.status, run.progress = "running", 0.5
        session.add(run)
        notification = session.exec(select(Notification)).one()
        notification.read_at = notification.created_at
        session.add(notification)
        session.commit()
    assert version(hub_env) == before
    with Session(hub_env) as session:  # and the hook still sees a public write next to a private one
        session.add(Notification(user_id=admin_user.id, kind="system.changed", target="x", subject="s", body="b"))
        system = session.get(System, baselines["echo"])
        system.description = "changed beside a notification"
        session.add(system)
        session.commit()
    assert version(hub_env) == before + 1


def test_bump_by_hand_for_writes_the_orm_cannot_see(hub_env, people):
    before = version(hub_env)
    with Session(hub_env) as session:
        session.execute(sa.text("UPDATE system SET description = 'raw'"))  # raw SQL: no hook sees it
        bump(session)
        session.commit()
    assert version(hub_env) == before + 1


def test_new_public_systems_bump(hub_env, people):
    from hub.models import User

    before = version(hub_env)
    with Session(hub_env) as session:
        owner = session.exec(select(User).where(User.email == "owner@example.org")).one()
        submitted_system(session, "fresh bot", owner.id, True, ["hi"] * 3)  # two commits: system, submission
    assert version(hub_env) == before + 2


def test_postgres_bumps_in_the_transaction(postgres_url, monkeypatch):
    """The same hook on PostgreSQL: invisible to another connection until the commit."""
    from hub import db
    from hub.migrate import upgrade
    from tests.hub.conftest import _clear_caches

    monkeypatch.setenv("HUB_DATABASE_URL", postgres_url)
    _clear_caches()
    upgrade()
    engine = db.get_engine()
    try:
        start = version(engine)
        with Session(engine) as session:
            session.add(System(name="pg bot", is_public=True))
            session.flush()
            assert version(engine) == start
            session.commit()
        assert version(engine) == start + 1
    finally:
        engine.dispose()
        _clear_caches()
