"""Ratings racing from many raters at once, on SQLite and PostgreSQL: no slot given twice, no rating lost or
duplicated, counters in step with the rows. Each thread has its own Session, as each request of the server has.

Afterwards the database is checked with plain SQL (not through the services under test)."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlmodel import Session

from evaluation.dataset import load_dataset
from hub import db, queue, settings, storage
from hub.errors import Conflict
from hub.models import Assignment, Experiment, Submission, SubmissionStatus, System, User
from hub.services.accounts.accounts import create_user
from hub.services.human import assignments, raters
from hub.services.submissions.demo import BASELINES
from tests.hub.conftest import DATASET, POSTGRES_ADMIN_URL, new_experiment

RACERS = 30
POOL = 32  # connections per database: more than the racing threads that hold one at a barrier


@contextmanager
def fresh_database(kind: str, folder: Path) -> Iterator[str]:
    """The URL of a new empty database of `kind` (SQLite in `folder`, or a PostgreSQL database dropped afterwards)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'hub.db'}"
        return
    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"hub_race_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_ADMIN_URL}: {exc.orig}")
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def clear_caches() -> None:
    for cached in (settings.get_settings, db.get_engine, storage.get_storage, queue.get_huey, queue.tasks):
        cached.cache_clear()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def race_db(request, tmp_path_factory):
    """(engine, admin, baseline system ids) on a fresh migrated database of each kind, shared by this module's tests
    (each test makes its own experiment and checks only that)."""
    from hub.migrate import upgrade

    folder = tmp_path_factory.mktemp(f"race-{request.param}")
    with fresh_database(request.param, folder) as url, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(folder))
        patch.setenv("HUB_DATABASE_URL", url)
        for name in ("HUB_STORAGE_URL", "HUB_QUEUE_URL"):
            patch.delenv(name, raising=False)
        clear_caches()
        upgrade()
        db.get_engine().dispose()
        # The server's engine, with a pool large enough for every racing thread to hold a connection at once.
        engine = db.make_engine(url, pool_size=POOL, max_overflow=0)
        assert engine.dialect.name == request.param
        try:
            yield engine, *_admin_and_baselines(engine)
        finally:
            engine.dispose()
            clear_caches()


def _admin_and_baselines(engine) -> tuple[User, dict[str, int]]:
    dataset = load_dataset(DATASET)
    systems = {}
    with Session(engine) as session:
        admin = create_user(
            session, email="admin@example.org", password="correct horse battery", display_name="a", is_admin=True
        )
        session.expunge(admin)
        for name in ("echo", "retrieval"):  # approved responses are all an experiment needs (no scoring)
            system = System(name=name, is_baseline=True, is_public=True)
            session.add(system)
            session.commit()
            systems[name] = system.id
            responses = (BASELINES / DATASET / f"{name}.txt").read_bytes()
            session.add(
                Submission(
                    system_id=system.id,
                    dataset_name=DATASET,
                    dataset_fingerprint=dataset.fingerprint,
                    responses_sha256=storage.get_storage().put(responses),
                    status=SubmissionStatus.approved,
                )
            )
            session.commit()
    return admin, systems


def run_together(count: int, work: Callable[[int], object]) -> list[object]:
    """`work(i)` in `count` threads released at the same instant; its results (or the exception it raised)."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racing thread hung"
    return results


def claim(engine, experiment_id: int, rater_name: str) -> tuple[int, dict[int, str]] | None:
    """One claim in its own session: (assignment id, answers for every item of its task), or None."""
    with Session(engine) as session:
        rater = raters.rater_for(session, "hub", rater_name)
        assignment = assignments.claim_task(session, session.get(Experiment, experiment_id), rater)
        if assignment is None:
            return None
        rng = random.Random(f"{rater_name}:{assignment.id}")
        items = assignments.task_items(session, assignment.task_id)
        return assignment.id, {item.id: rng.choice(["left", "tie", "right"]) for item in items}


def submit(engine, assignment_id: int, choices: dict[int, str], loaded: threading.Barrier | None = None) -> str:
    """One submission in its own session, as the API route makes it (load the assignment, then submit); with
    `loaded`, it waits there until the racing submissions have loaded it too."""
    with Session(engine) as session:
        assignment = session.get(Assignment, assignment_id)
        if loaded is not None:
            loaded.wait(timeout=30)
        done = assignments.submit(session, assignment, choices)
        assert done.completion_code
        return done.completion_code


def rows(engine, query: str, **params) -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(r) for r in connection.execute(sa.text(query), params)]


def ledger_problems(engine, experiment_id: int) -> list[str]:
    """Every way the assignments, ratings and task counters of an experiment can disagree, in plain SQL."""
    e = {"e": experiment_id}
    problems = []
    checks = {
        "task with more live assignments than slots": """
            SELECT t.id FROM task t JOIN assignment a ON a.task_id = t.id
            WHERE t.experiment_id = :e AND a.status <> 'released' GROUP BY t.id, t.slots HAVING COUNT(*) > t.slots""",
        "claimed counter differs from live assignments": """
            SELECT t.id FROM task t WHERE t.experiment_id = :e AND t.claimed <>
              (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id AND a.status <> 'released')""",
        "completed counter differs from submitted assignments": """
            SELECT t.id FROM task t WHERE t.experiment_id = :e AND t.completed <>
              (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id
               AND a.status IN ('submitted', 'approved', 'rejected'))""",
        "a rater with the same task twice": """
            SELECT task_id, rater_id FROM assignment WHERE experiment_id = :e
            GROUP BY task_id, rater_id HAVING COUNT(*) > 1""",
        "an (assignment, item) rated twice": """
            SELECT assignment_id, item_id FROM rating WHERE experiment_id = :e AND assignment_id IS NOT NULL
            GROUP BY assignment_id, item_id HAVING COUNT(*) > 1""",
        "a rater with the same item twice": """
            SELECT rater_id, item_id FROM rating WHERE experiment_id = :e AND rater_id IS NOT NULL
            GROUP BY rater_id, item_id HAVING COUNT(*) > 1""",
        "a rating without a submitted assignment": """
            SELECT r.id FROM rating r LEFT JOIN assignment a ON a.id = r.assignment_id
            WHERE r.experiment_id = :e AND r.auto_tie = :false
              AND (a.id IS NULL OR a.status NOT IN ('submitted', 'approved', 'rejected'))""",
        "a rating of an item outside the assignment's task": """
            SELECT r.id FROM rating r JOIN assignment a ON a.id = r.assignment_id
            JOIN experimentitem i ON i.id = r.item_id WHERE r.experiment_id = :e AND i.task_id <> a.task_id""",
        "a submitted assignment missing ratings": """
            SELECT a.id FROM assignment a WHERE a.experiment_id = :e
              AND a.status IN ('submitted', 'approved', 'rejected')
              AND (SELECT COUNT(*) FROM rating r WHERE r.assignment_id = a.id)
               <> (SELECT COUNT(*) FROM experimentitem i WHERE i.task_id = a.task_id)""",
        "a submitted assignment without a completion code": """
            SELECT a.id FROM assignment a WHERE a.experiment_id = :e
              AND a.status IN ('submitted', 'approved', 'rejected') AND a.completion_code IS NULL""",
    }
    for name, query in checks.items():
        found = rows(engine, query, **e, false=False)
        if found:
            problems.append(f"{name}: {found[:5]}")
    return problems


def stored_answers(engine, assignment_id: int) -> tuple[str | None, dict[int, str]]:
    code = rows(engine, "SELECT completion_code FROM assignment WHERE id = :a", a=assignment_id)[0][0]
    choices = dict(rows(engine, "SELECT item_id, choice FROM rating WHERE assignment_id = :a", a=assignment_id))
    return code, choices


def test_thirty_raters_at_once_fill_every_slot_exactly_and_every_acknowledged_rating_is_stored(race_db):
    """30 raters claim and submit in a loop until nothing is left; every submission is sent twice at the same
    instant (a double click). 12 tasks x 2 slots: fewer slots than raters, so raters race for the last ones."""
    engine, admin, systems = race_db
    experiment = new_experiment(engine, admin, systems, raters_per_prompt=2)
    acknowledged: list[tuple[int, dict[int, str], str]] = []
    lock = threading.Lock()

    def rater(i: int) -> int:
        done = 0
        while (claimed := claim(engine, experiment.id, f"racer-{i}")) is not None:
            assignment_id, choices = claimed
            twice = run_together(2, lambda _, a=assignment_id, c=choices: submit(engine, a, c))
            for result in twice:
                if isinstance(result, Exception):
                    raise result
            assert twice[0] == twice[1], "a double submission got two different completion codes"
            with lock:
                acknowledged.append((assignment_id, choices, twice[0]))
            done += 1
        return done

    results = run_together(RACERS, rater)
    errors = [r for r in results if isinstance(r, Exception)]
    assert errors == []

    slots, items = rows(
        engine,
        """SELECT SUM(t.slots), SUM(t.slots * (SELECT COUNT(*) FROM experimentitem i WHERE i.task_id = t.id))
           FROM task t WHERE t.experiment_id = :e""",
        e=experiment.id,
    )[0]
    assert slots == 24  # 120 prompts in blocks of 10, 2 raters each
    # Nothing frees a slot here, so the raters filled every slot: each exactly once.
    assert sum(results) == len(acknowledged) == slots
    assert len({a for a, _, _ in acknowledged}) == slots
    stored = rows(
        engine, "SELECT COUNT(*) FROM rating WHERE experiment_id = :e AND assignment_id IS NOT NULL", e=experiment.id
    )[0][0]
    assert stored == items
    for assignment_id, choices, code in acknowledged:
        assert stored_answers(engine, assignment_id) == (code, choices)
    assert ledger_problems(engine, experiment.id) == []


def live_assignments(engine, experiment_id: int) -> list[tuple]:
    return rows(
        engine,
        "SELECT id, rater_id FROM assignment WHERE experiment_id = :e AND status <> 'released' ORDER BY id",
        e=experiment_id,
    )


def expire(engine, assignment_id: int) -> None:
    with Session(engine) as session:
        assignment = session.get(Assignment, assignment_id)
        assignment.expires_at = assignment.started_at - timedelta(seconds=1)
        session.add(assignment)
        session.commit()


def test_raters_racing_for_the_last_slot_one_wins_and_a_released_slot_goes_out_once(race_db):
    """One task of three slots, two taken: eight raters race for the third. Then the winner's assignment times out
    and the next eight race again, all releasing it at once (it must be released once, and given once); in the last
    round the timed-out rater's late submission races them too: it keeps the slot or loses it, never both."""
    engine, admin, systems = race_db
    experiment = new_experiment(engine, admin, systems, prompt_ids=["hov1-001", "hov1-002"], raters_per_prompt=3)
    (slots,) = rows(engine, "SELECT slots FROM task WHERE experiment_id = :e", e=experiment.id)[0]
    assert slots == 3
    for i in range(2):
        assert claim(engine, experiment.id, f"early-{i}") is not None

    previous: tuple[int, dict[int, str]] | None = None
    for round_ in range(4):
        if previous is not None:
            expire(engine, previous[0])
        late_submitter = round_ == 3 and previous is not None

        def racer(i: int, round_=round_, previous=previous, late_submitter=late_submitter):
            if late_submitter and i == 0:
                return ("late", submit(engine, previous[0], previous[1]))
            return ("claim", claim(engine, experiment.id, f"round-{round_}-{i}"))

        results = run_together(8, racer)
        errors = [r for i, r in enumerate(results) if isinstance(r, Exception) and not (i == 0 and late_submitter)]
        assert errors == []
        winners = [r[1] for r in results if isinstance(r, tuple) and r[0] == "claim" and r[1] is not None]
        late_kept = any(isinstance(r, tuple) and r[0] == "late" for r in results)
        late_refused = late_submitter and isinstance(results[0], Conflict)
        assert len(winners) + late_kept == 1, f"round {round_}: {results}"
        assert late_kept + late_refused == (1 if late_submitter else 0)
        assert len(live_assignments(engine, experiment.id)) == slots
        assert ledger_problems(engine, experiment.id) == []
        previous = winners[0] if winners else previous
    released = rows(
        engine, "SELECT COUNT(*) FROM assignment WHERE experiment_id = :e AND status = 'released'", e=experiment.id
    )[0][0]
    assert released == 3 - late_kept


@pytest.mark.parametrize("free_slots", [1, 3])
def test_the_same_late_submission_twice_at_once_gets_one_code_and_takes_one_slot(race_db, free_slots):
    """A timed-out assignment submitted twice at the same instant (a double click) after its slot was released: both
    requests get the same completion code, and the task counts one rater for it, not two.

    The interleaving is forced: both requests have loaded the (released) assignment before either submits."""
    engine, admin, systems = race_db
    experiment = new_experiment(engine, admin, systems, prompt_ids=["hov1-001", "hov1-002"], raters_per_prompt=3)
    assignment_id, choices = claim(engine, experiment.id, "slow")
    for i in range(3 - free_slots):
        assert claim(engine, experiment.id, f"other-{i}") is not None
    expire(engine, assignment_id)
    with Session(engine) as session:  # another rater's visit releases it
        assert assignments.release_expired(session, experiment.id) == 1

    both_loaded = threading.Barrier(2)
    codes = run_together(2, lambda _: submit(engine, assignment_id, choices, both_loaded))
    assert [c for c in codes if isinstance(c, Exception)] == []
    assert codes[0] == codes[1]
    assert stored_answers(engine, assignment_id) == (codes[0], choices)
    assert ledger_problems(engine, experiment.id) == []


def test_raters_arriving_together_all_get_work_while_free_tasks_remain(race_db, monkeypatch):
    """120 one-prompt tasks of one slot each, 25 raters at once: there is work for every one of them.

    The interleaving is forced: every rater has picked its candidate tasks before the first slot is taken."""
    engine, admin, systems = race_db
    experiment = new_experiment(engine, admin, systems, prompts_per_task=1, raters_per_prompt=1)
    free = rows(engine, "SELECT COUNT(*) FROM task WHERE experiment_id = :e AND claimed < slots", e=experiment.id)
    racers = 25
    assert free[0][0] > racers
    all_chose = threading.Barrier(racers)
    first_try: set[int] = set()
    take_slot = assignments._take_slot

    def in_step(session, task_id):
        me = threading.get_ident()
        if me not in first_try:
            first_try.add(me)
            all_chose.wait(timeout=60)
        return take_slot(session, task_id)

    monkeypatch.setattr(assignments, "_take_slot", in_step)
    results = run_together(racers, lambda i: claim(engine, experiment.id, f"crowd-{i}"))
    assert [r for r in results if isinstance(r, Exception)] == []
    assert ledger_problems(engine, experiment.id) == []
    assert sum(r is None for r in results) == 0, "raters were told nothing is left while free tasks remained"


@pytest.mark.parametrize("race_db", ["postgresql"], indirect=True)
def test_a_late_submission_and_a_release_of_the_same_task_do_not_deadlock(race_db):
    """Three assignments of one task time out; the middle one is submitted late while another rater's visit
    releases them all. Both requests succeed: the late work is stored, the other two slots go back.

    The interleaving is forced with statement hooks: the submission has marked its assignment and waits before it
    counts the task as completed until the release has uncounted the first assignment on the task."""
    engine, admin, systems = race_db
    experiment = new_experiment(engine, admin, systems, prompt_ids=["hov1-001", "hov1-002"], raters_per_prompt=3)
    claimed = sorted(claim(engine, experiment.id, f"slow-{i}") for i in range(3))
    for assignment_id, _ in claimed:
        expire(engine, assignment_id)
    late_id, late_choices = claimed[1]  # the middle one, whatever order the release walks them in
    submitting, released_one = threading.Event(), threading.Event()
    role = threading.local()
    # What each side's wait saw: a wait that timed out means the forced interleaving never happened.
    waited: dict[str, list[bool]] = {"submit": [], "release": []}

    @sa.event.listens_for(engine, "before_cursor_execute")
    def before(conn, cursor, statement, params, context, executemany):
        if getattr(role, "name", "") == "submit" and statement.startswith("UPDATE task SET completed"):
            submitting.set()
            waited["submit"].append(released_one.wait(timeout=5))

    @sa.event.listens_for(engine, "after_cursor_execute")
    def after(conn, cursor, statement, params, context, executemany):
        if getattr(role, "name", "") == "release" and statement.startswith("UPDATE task SET claimed"):
            released_one.set()

    def act(i: int):
        role.name = ("submit", "release")[i]
        if i == 0:
            return submit(engine, late_id, late_choices)
        waited["release"].append(submitting.wait(timeout=5))
        with Session(engine) as session:
            return assignments.release_expired(session, experiment.id)

    try:
        code, released = run_together(2, act)
    finally:
        sa.event.remove(engine, "before_cursor_execute", before)
        sa.event.remove(engine, "after_cursor_execute", after)
    assert not isinstance(code, Exception) and not isinstance(released, Exception), (code, released)
    assert waited == {"submit": [True], "release": [True]}, f"the forced interleaving did not happen: {waited}"
    assert released == 2
    assert stored_answers(engine, late_id) == (code, late_choices)
    assert ledger_problems(engine, experiment.id) == []
