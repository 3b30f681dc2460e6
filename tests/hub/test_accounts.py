"""Accounts, API tokens and the audit log, against the real migrated databases (SQLite always, PostgreSQL if up)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from hub.db import make_engine
from hub.errors import BadRequest, Conflict, NotFound, Unauthorized
from hub.migrate import upgrade
from hub.models import ApiToken, AuditEntry, User
from hub.services.accounts import accounts
from hub.services.platform import audit

PASSWORD = "correct horse battery"


@pytest.fixture
def session(hub_env):
    with Session(hub_env) as session:
        yield session


def make_user(session: Session, email: str = "ada@example.org", **kwargs) -> User:
    return accounts.create_user(session, email=email, password=PASSWORD, display_name="Ada", **kwargs)


def test_password_is_stored_hashed_and_verifies(session):
    user = make_user(session)
    stored = session.exec(sa.text('SELECT password_hash FROM "user"')).scalar_one()
    assert PASSWORD not in stored
    assert stored.startswith("$argon2id$")
    assert accounts.verify_password(stored, PASSWORD)
    assert not accounts.verify_password(stored, PASSWORD + "x")
    assert not accounts.verify_password("not a hash", PASSWORD)
    assert accounts.authenticate(session, email="ada@example.org", password=PASSWORD).id == user.id


def test_wrong_password_and_unknown_email_fail_alike(session):
    make_user(session)
    with pytest.raises(Unauthorized) as wrong_password:
        accounts.authenticate(session, email="ada@example.org", password="wrong password!")
    with pytest.raises(Unauthorized) as unknown_email:
        accounts.authenticate(session, email="nobody@example.org", password=PASSWORD)
    assert wrong_password.value.message == unknown_email.value.message == "wrong email or password"
    assert wrong_password.value.status_code == 401


def test_outdated_hash_is_upgraded_on_login(session):
    from argon2 import PasswordHasher

    user = make_user(session)
    user.password_hash = PasswordHasher(time_cost=1, memory_cost=8192).hash(PASSWORD)
    session.add(user)
    session.commit()
    old_hash = user.password_hash
    logged_in = accounts.authenticate(session, email="ada@example.org", password=PASSWORD)
    assert logged_in.password_hash != old_hash
    assert accounts.verify_password(logged_in.password_hash, PASSWORD)


def test_email_is_normalised_and_unique_case_insensitively(session):
    user = make_user(session, email="  Ada.Lovelace@Example.ORG ")
    assert user.email == "ada.lovelace@example.org"
    assert accounts.authenticate(session, email="ADA.lovelace@example.org", password=PASSWORD).id == user.id
    with pytest.raises(Conflict) as error:
        make_user(session, email="ada.LOVELACE@example.org")
    assert error.value.status_code == 409
    assert error.value.message == "an account with this email already exists"
    assert len(session.exec(select(User)).all()) == 1


def test_race_on_duplicate_email_is_a_conflict(session, monkeypatch):
    make_user(session)
    # Simulate the other request committing between our existence check and our insert.
    monkeypatch.setattr(accounts, "_user_by_email", lambda _session, _email: None)
    with pytest.raises(Conflict):
        make_user(session)
    assert len(session.exec(select(User)).all()) == 1


@pytest.mark.parametrize("password", ["", "short", "123456789", "x" * 1025])
def test_bad_password_length_names_the_field(session, password):
    with pytest.raises(BadRequest) as error:
        accounts.create_user(session, email="ada@example.org", password=password, display_name="Ada")
    assert error.value.field == "password"
    assert error.value.status_code == 400
    assert "10 to 1024 characters" in error.value.message


@pytest.mark.parametrize(
    "email", ["", "ada", "ada@", "@example.org", "ada@example", "ada@@example.org", "a da@example.org",
              "ada@.org", "ada@example..org", "a" * 310 + "@example.org"]
)  # fmt: skip
def test_bad_email_names_the_field(session, email):
    with pytest.raises(BadRequest) as error:
        accounts.create_user(session, email=email, password=PASSWORD, display_name="Ada")
    assert error.value.field == "email"


def test_blank_display_name_names_the_field(session):
    with pytest.raises(BadRequest) as error:
        accounts.create_user(session, email="ada@example.org", password=PASSWORD, display_name="   ")
    assert error.value.field == "display_name"


def test_token_round_trip(session):
    user = make_user(session)
    api_token, token = accounts.create_token(session, user, name="laptop")
    assert token.startswith("ceh_")
    assert api_token.prefix == token[4:12]
    assert accounts.user_for_token(session, token).id == user.id
    assert [t.id for t in accounts.list_tokens(session, user)] == [api_token.id]


def test_token_plaintext_is_never_stored(session):
    user = make_user(session)
    _, token = accounts.create_token(session, user, name="laptop")
    row = session.exec(sa.text("SELECT * FROM apitoken")).mappings().one()
    for column, value in row.items():
        assert token not in str(value), column
        assert token[4:] not in str(value), column


def test_revoked_token_is_refused(session):
    user = make_user(session)
    api_token, token = accounts.create_token(session, user, name="laptop")
    revoked = accounts.revoke_token(session, user, api_token.id)
    assert revoked.revoked_at is not None
    with pytest.raises(Unauthorized) as error:
        accounts.user_for_token(session, token)
    assert error.value.message == "invalid or revoked API token"
    # Idempotent: revoking again keeps the first revocation time.
    assert accounts.revoke_token(session, user, api_token.id).revoked_at == revoked.revoked_at
    assert accounts.list_tokens(session, user)[0].revoked_at is not None


def test_revoking_someone_elses_token_is_not_found_and_changes_nothing(session):
    owner = make_user(session)
    other = make_user(session, email="mallory@example.org")
    api_token, token = accounts.create_token(session, owner, name="laptop")
    with pytest.raises(NotFound) as error:
        accounts.revoke_token(session, other, api_token.id)
    with pytest.raises(NotFound) as missing:
        accounts.revoke_token(session, other, 999_999)
    assert error.value.message == missing.value.message  # a foreign id looks exactly like a missing one
    assert accounts.user_for_token(session, token).id == owner.id
    assert accounts.list_tokens(session, other) == []


@pytest.mark.parametrize("token", ["", "ceh_", "hello world", "ceh_" + "A" * 43, "x" * 10_000, "ceh_" + "x" * 10_000])
def test_malformed_tokens_are_refused(session, token):
    accounts.create_token(session, make_user(session), name="laptop")
    with pytest.raises(Unauthorized) as error:
        accounts.user_for_token(session, token)
    assert error.value.message == "invalid or revoked API token"


def test_audit_recent_is_newest_first(session):
    admin = make_user(session, is_admin=True)
    first = audit.record(session, actor=admin, action="system.approve", target="system:1", detail={"why": "ok"})
    second = audit.record(session, actor=None, action="jobs.requeue", target="submission:7")
    third = audit.record(session, actor=admin, action="system.hide", target="system:2")
    # Force an out-of-insertion-order timestamp: ordering must follow time, not id.
    third.created_at = first.created_at - timedelta(seconds=1)
    session.add(third)
    session.commit()
    entries = audit.recent(session)
    assert [e.id for e in entries] == [second.id, first.id, third.id]
    assert entries[1].actor_id == admin.id and entries[1].detail == {"why": "ok"}
    assert entries[0].actor_id is None and entries[0].detail == {}
    assert [e.id for e in audit.recent(session, limit=1)] == [second.id]
    assert len(session.exec(select(AuditEntry)).all()) == 3


def test_audit_long_target_is_shortened_not_refused(session):
    entry = audit.record(session, actor=None, action="system.rename", target="s" * 500)
    assert len(entry.target) == 200


@pytest.fixture
def pg_engine(postgres_url):
    """A migrated PostgreSQL database for one test."""
    upgrade(postgres_url)
    engine = make_engine(postgres_url)
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_engine(request):
    return request.getfixturevalue("hub_env" if request.param == "sqlite" else "pg_engine")


def test_accounts_and_tokens_on_each_database(any_engine):
    with Session(any_engine) as session:
        user = make_user(session, email="Ada@Example.org")
        with pytest.raises(Conflict):
            make_user(session, email="ada@example.org")
        # The session stays usable after a conflict.
        api_token, token = accounts.create_token(session, user, name="ci")
        assert accounts.user_for_token(session, token).id == user.id
        assert session.exec(select(ApiToken.token_sha256)).one() != token
        accounts.revoke_token(session, user, api_token.id)
        with pytest.raises(Unauthorized):
            accounts.user_for_token(session, token)
        entry = audit.record(session, actor=user, action="token.revoke", target=f"apitoken:{api_token.id}")
        assert audit.recent(session)[0].id == entry.id
        assert entry.created_at.tzinfo is not None
