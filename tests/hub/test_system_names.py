"""Public system names are unique up to look-alikes (NFKC, case folding, the UTS #39 confusable skeleton), enforced by
a stored key with a unique index (so racing requests cannot both win), without revealing private systems; names with
hidden or control characters and over-long or non-http(s) fields are refused with 422 naming the field."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub import db
from hub.migrate import upgrade
from hub.models import System
from hub.services.submissions import submissions as submission_service
from hub.system_names import name_key
from hub.web.app import create_app
from tests.hub.conftest import DATASET, _clear_caches, post

CYRILLIC_ECHO = "\u0435\u0441ho"  # U+0435 and U+0441 are Cyrillic letters
RACERS = 6


def _file(tag: str) -> bytes:
    """A valid response file of its own (so the duplicate-upload check never fires)."""
    return ("\n".join(f"{tag} {p.references[0]}" for p in load_dataset(DATASET).prompts) + "\n").encode()


@pytest.mark.parametrize(
    ("first", "second"),
    [("echo", CYRILLIC_ECHO), ("echo", "ECHO"), ("echo", "\uff45\uff43\uff48\uff4f"), ("My  bot", "my bot")],
)
def test_look_alike_names_share_a_key(first, second):
    assert name_key(first) == name_key(second)


def test_different_names_keep_different_keys():
    keys = {name_key(n) for n in ("echo", "echo2", "retrieval", "Human1", "Human2", "ech")}
    assert len(keys) == 6


def test_a_public_name_that_looks_like_a_baseline_is_refused_with_409_naming_it(hub_env, people, baselines):
    with TestClient(create_app()) as client:
        for name in ("echo", CYRILLIC_ECHO, " Echo ", "\uff45\uff43\uff48\uff4f"):
            response = post(client, people["owner"], {"name": name, "is_public": "true"})
            assert response.status_code == 409, response.text
            body = response.json()
            assert body["field"] == "name" and f"baseline #{baselines['echo']}" in body["error"]
            assert "'echo'" in body["error"]
    with Session(hub_env) as session:
        assert len(session.exec(select(System)).all()) == 2  # nothing stored


def test_private_names_neither_clash_nor_leak(hub_env, people, baselines):
    with TestClient(create_app()) as client:
        # A private system may carry any name, even a baseline's: it is shown to nobody else.
        assert post(client, people["owner"], {"name": "echo"}, content=_file("a")).status_code == 201
        hidden = post(client, people["owner"], {"name": "Secret bot"}, content=_file("b"))
        assert hidden.status_code == 201
        # Another researcher publishes the same name: allowed, so the private system's existence is not revealed.
        published = post(client, people["other"], {"name": "secret BOT", "is_public": "true"}, content=_file("c"))
        assert published.status_code == 201, published.text
        # Now the name is public: the first owner cannot publish a look-alike, and is told which public system has it.
        again = post(client, people["owner"], {"name": "Secret bot", "is_public": "true"}, content=_file("d"))
    assert again.status_code == 409 and "public system #" in again.json()["error"]
    assert "'secret BOT'" in again.json()["error"]


BAD_FIELDS = [
    ("name", "e\u202echo", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("name", "ec\u2066ho", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    ("name", "ec\u200bho", "U+200B ZERO WIDTH SPACE"),
    ("name", "two\nlines", "U+000A"),
    ("name", "tab\tbed", "U+0009"),
    ("name", "nul\x00byte", "U+0000"),
    ("name", "x" * 121, "1 to 120 characters"),
    ("name", "   ", "1 to 120 characters"),
    ("description", "ok\x00not", "U+0000"),
    ("description", "ok\u202enot", "U+202E"),
    ("description", "d" * 10_001, "at most 10,000 characters"),
    ("paper_url", "javascript:alert(1)", "http:// or https://"),
    ("code_url", "ftp://example.org/x", "http:// or https://"),
    ("weights_url", "https://example.org/" + "w" * 2048, "at most 2,048 characters"),
    ("paper_url", "https://exa mple.org/", "http:// or https://"),
]


def test_bad_text_fields_are_refused_with_422_naming_the_field(hub_env, people):
    with TestClient(create_app()) as client:
        for field, value, message in BAD_FIELDS:
            response = post(client, people["owner"], {field: value})
            assert response.status_code == 422, (field, value, response.text)
            assert response.json()["field"] == field and message in response.json()["error"], response.text
    with Session(hub_env) as session:
        assert session.exec(select(System)).all() == []


def test_descriptions_keep_line_breaks_and_right_to_left_marks(hub_env, people):
    with TestClient(create_app()) as client:
        response = post(client, people["owner"], {"description": "line one\nline two\t\u200f\u05e9\u05dc\u05d5\u05dd"})
    assert response.status_code == 201, response.text


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, hub_env, monkeypatch):
    if request.param == "sqlite":
        yield hub_env
        return
    monkeypatch.setenv("HUB_DATABASE_URL", request.getfixturevalue("postgres_url"))
    _clear_caches()
    upgrade()
    yield db.get_engine()
    db.get_engine().dispose()


def test_the_database_refuses_a_look_alike_public_name_whatever_the_path(engine):
    with Session(engine) as session:
        session.add(System(name="Echo", is_public=True))
        session.commit()
        session.add(System(name=CYRILLIC_ECHO, is_baseline=True))
        with pytest.raises(IntegrityError):
            session.commit()
        session.rollback()
        session.add(System(name=CYRILLIC_ECHO))  # private: holds no key
        session.commit()


def test_racing_public_uploads_of_look_alike_names_make_one_system(engine, monkeypatch):
    from hub.services.accounts.accounts import create_token, create_user

    with Session(engine) as session:
        tokens = [
            create_token(
                session, create_user(session, email=f"r{i}@example.org", password="x" * 12, display_name="r"), name="t"
            )[1]
            for i in range(RACERS)
        ]
    all_checked = threading.Barrier(RACERS)
    check = submission_service.refuse_public_clash
    waited: set[int] = set()

    def check_then_wait(*args, **kwargs):
        check(*args, **kwargs)
        if threading.get_ident() not in waited:  # every request passes the check before any of them inserts
            waited.add(threading.get_ident())
            # A racer slowed past the wait (a loaded machine) breaks the barrier: the others go on, still no 500.
            with contextlib.suppress(threading.BrokenBarrierError):
                all_checked.wait(timeout=60)

    monkeypatch.setattr(submission_service, "refuse_public_clash", check_then_wait)
    names = ["Racer", "racer", "RACER", "r\u0430cer", "Racer ", "\uff32acer"]  # U+0430: Cyrillic
    with TestClient(create_app()) as client, ThreadPoolExecutor(RACERS) as pool:
        replies = list(
            pool.map(
                lambda i: post(client, tokens[i], {"name": names[i], "is_public": "true"}, content=_file(str(i))),
                range(RACERS),
            )
        )
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [201] + [409] * (RACERS - 1), [r.text for r in replies]
    assert len(waited) == RACERS  # every request passed the check (and waited for the others) before answering
    with Session(engine) as session:
        [winner] = session.exec(select(System)).all()
    assert all(f"public system #{winner.id}" in r.json()["error"] for r in replies if r.status_code == 409)


def test_the_migration_keys_existing_public_systems_and_leaves_earlier_look_alikes_unkeyed(tmp_path):
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    upgrade(url, "0003")
    engine = sa.create_engine(url)
    rows = [("Echo", 0, 1), ("echo", 1, 1), (CYRILLIC_ECHO, 0, 1), ("echo", 0, 0), ("Other", 0, 1)]
    with engine.begin() as connection:
        for name, baseline, public in rows:
            connection.execute(
                sa.text(
                    "INSERT INTO system (name, description, is_baseline, is_public, created_at) "
                    "VALUES (:name, '', :baseline, :public, '2026-01-01')"
                ),
                {"name": name, "baseline": baseline, "public": public},
            )
    upgrade(url)
    with engine.connect() as connection:
        keys = dict(connection.execute(sa.text("SELECT id, public_name_key FROM system")).all())
    assert keys[2] == name_key("echo")  # the baseline holds the key, though a public look-alike is older
    assert keys[1] is None and keys[3] is None  # earlier look-alikes stay, unkeyed
    assert keys[4] is None  # private
    assert keys[5] == name_key("Other")
    engine.dispose()
