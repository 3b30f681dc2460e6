"""The integrity check of scripts/bench_ratings.py: after the run, plain SQL against the database compares what the
server acknowledged to the raters with what it stored."""

from __future__ import annotations

from bench_raters import Ack

# The checks of `verify` that must be zero: the exit code fails on any of them, and the table's `other` column sums
# those without a column of their own. "committed, answer lost in the crash" is not one of them: it counts
# submitted assignments no rater was acknowledged, i.e. the server committed and was SIGKILLed before its reply left,
# and the rater's resend (which the hub answers with the same code) got no answer before its phase ended. The work is
# stored whole and once (the checks above would see otherwise); only the rater never saw its completion code, which
# is what a crash between commit and reply does. So it is printed with the checks, but is neither in `other` nor a
# failure.
INTEGRITY_CHECKS = (
    "lost",
    "duplicated",
    "wrong answer stored",
    "completion code differs",
    "acknowledged twice",
    "partial submissions",
    "ratings without a submitted assignment",
    "tasks over their slots",
    "task counters off",
)


def integrity_problems(checks: dict[str, int]) -> dict[str, int]:
    """The integrity checks that are not zero."""
    return {name: checks[name] for name in INTEGRITY_CHECKS if checks[name]}


def verify(url: str, experiment_ids: list[int], acks: list[Ack]) -> dict[str, int]:
    """Plain SQL against the database: what the acknowledged submissions promised is there, once."""
    import sqlalchemy as sa

    from hub.db import make_engine

    engine = make_engine(url)
    ids = {"ids": experiment_ids}

    def rows(query: str) -> list[tuple]:
        with engine.connect() as connection:
            statement = sa.text(query).bindparams(sa.bindparam("ids", expanding=True))
            return [tuple(r) for r in connection.execute(statement, ids)]

    stored: dict[int, dict[int, list[str]]] = {}
    for assignment_id, item_id, choice in rows(
        "SELECT assignment_id, item_id, choice FROM rating WHERE experiment_id IN :ids AND assignment_id IS NOT NULL"
    ):
        stored.setdefault(assignment_id, {}).setdefault(item_id, []).append(choice)
    codes = dict(
        (r[0], (r[1], r[2]))
        for r in rows("SELECT id, completion_code, status FROM assignment WHERE experiment_id IN :ids")
    )
    lost = wrong = code_mismatch = 0
    for ack in acks:
        got = stored.get(ack.assignment_id, {})
        for item_id, choice in ack.choices.items():
            if item_id not in got:
                lost += 1
            elif got[item_id] != [choice]:
                wrong += 1
        code, _status = codes.get(ack.assignment_id, (None, None))
        code_mismatch += code != ack.code
    acked = {a.assignment_id for a in acks}
    submitted = {a for a, (_, status) in codes.items() if status == "submitted"}
    result = {
        "acknowledged submissions": len(acks),
        "acknowledged judgements": sum(len(a.choices) for a in acks),
        "stored judgements": sum(len(v) for items in stored.values() for v in items.values()),
        "lost": lost,
        "wrong answer stored": wrong,
        "completion code differs": code_mismatch,
        "duplicated": sum(len(v) - 1 for items in stored.values() for v in items.values()),
        "acknowledged twice": len(acks) - len(acked),
        "committed, answer lost in the crash": len(submitted - acked),
        "partial submissions": rows(
            """SELECT COUNT(*) FROM assignment a WHERE a.experiment_id IN :ids AND a.status = 'submitted'
               AND (SELECT COUNT(*) FROM rating r WHERE r.assignment_id = a.id)
                <> (SELECT COUNT(*) FROM experimentitem i WHERE i.task_id = a.task_id)"""
        )[0][0],
        "ratings without a submitted assignment": rows(
            """SELECT COUNT(*) FROM rating r LEFT JOIN assignment a ON a.id = r.assignment_id
               WHERE r.experiment_id IN :ids AND r.assignment_id IS NOT NULL
               AND (a.id IS NULL OR a.status <> 'submitted')"""
        )[0][0],
        "tasks over their slots": rows(
            """SELECT COUNT(*) FROM task t WHERE t.experiment_id IN :ids AND t.slots <
               (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id AND a.status <> 'released')"""
        )[0][0],
        "task counters off": rows(
            """SELECT COUNT(*) FROM task t WHERE t.experiment_id IN :ids AND (
                 t.claimed <> (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id AND a.status <> 'released')
                 OR t.completed <> (SELECT COUNT(*) FROM assignment a WHERE a.task_id = t.id
                                    AND a.status = 'submitted'))"""
        )[0][0],
    }
    engine.dispose()
    return result
