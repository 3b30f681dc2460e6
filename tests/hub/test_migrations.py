"""The Alembic migrations build exactly the schema the models describe, on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from hub.migrate import check, upgrade

EXPECTED_TABLES = {
    "user",
    "apitoken",
    "system",
    "submission",
    "score",
    "auditentry",
    "data_version",
    "experiment",
    "task",
    "experimentitem",
    "rater",
    "raterinvite",
    "assignment",
    "rating",
    "irtfit",
    "browsersession",
    "outboxjob",
    "notification",  # 0013: notifications, the e-mail outbox, password resets
    "outgoingmail",
    "passwordreset",
    "judge",  # LLM judging (0011): judges, dataset attachments, runs, rubric grades, judge judgements
    "datasetjudging",
    "judgingrun",
    "rubricgrade",
    "judgejudgement",
    "conversationset",  # 0014: conversation sets, their per-turn values and per-role aggregates
    "conversationscore",
    "conversationaggregate",
    "ratingreason",  # 0015: raters' free-text reasons and their QA (judge and admin grades)
    "raterqarun",
    "raterqagrade",
    "raterqaadmingrade",
    "study",  # 0016: interactive studies (ChatHF, MILO): systems, schemas, invites, participants, chat trees
    "studyschema",
    "studysystem",
    "studyinvite",
    "studyparticipant",
    "chat",
    "chatmessage",
    "chatbranch",
    "chatrevert",
    "chatannotation",
    "annotationsuggestion",
    "draftrequest",
    "alembic_version",
}


def test_sqlite_migrations_match_the_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    upgrade(url)
    check(url)  # raises if autogenerate would find any difference
    assert set(sa.inspect(sa.create_engine(url)).get_table_names()) == EXPECTED_TABLES


def test_postgres_migrations_match_the_models(postgres_url):
    upgrade(postgres_url)
    check(postgres_url)
    engine = sa.create_engine(postgres_url)
    assert set(sa.inspect(engine).get_table_names()) == EXPECTED_TABLES
    engine.dispose()


def test_score_signature_is_unique_per_submission(tmp_path):
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    upgrade(url)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO system (name, description, is_baseline, is_public, created_at) "
                "VALUES ('s', '', 0, 1, '2026-01-01')"
            )
        )
        connection.execute(
            sa.text(
                "INSERT INTO submission (system_id, dataset_name, dataset_fingerprint, responses_sha256,"
                " responses_format, baseline_ids, status, progress, created_at, updated_at)"
                " VALUES (1, 'd', 'd@1', 'x', 'text', '[]', 'submitted', 0, '2026-01-01', '2026-01-01')"
            )
        )
    insert = sa.text(
        "INSERT INTO score (submission_id, metric, version, signature, corpus, per_prompt, details,"
        " created_at) VALUES (1, 'm', '1', 'sig', 0.5, '[]', '{}', '2026-01-01')"
    )
    with engine.begin() as connection:
        connection.execute(insert)
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as connection:
        connection.execute(insert)
