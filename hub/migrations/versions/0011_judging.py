"""LLM judging: registered judges, dataset attachments, judging runs, rubric grades and judge judgements

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 22:21:52.303547

"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "judge",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("base_url", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("key_ref", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column("template_version", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("temperature", sa.Float(), nullable=False),
        sa.Column("max_tokens", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("timeout_s", sa.Float(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "datasetjudging",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_name", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("label", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=True),
        sa.Column("rubric_yaml", sa.Text(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["judge_id"],
            ["judge.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_name", "kind", "label", "judge_id", name="uq_datasetjudging"),
    )
    with op.batch_alter_table("datasetjudging", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_datasetjudging_dataset_name"), ["dataset_name"], unique=False)
        batch_op.create_index(batch_op.f("ix_datasetjudging_judge_id"), ["judge_id"], unique=False)

    op.create_table(
        "judgejudgement",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("rater", sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False),
        sa.Column("dataset_name", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("dataset_fingerprint", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("prompt_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("system_a_id", sa.Integer(), nullable=False),
        sa.Column("system_b_id", sa.Integer(), nullable=False),
        sa.Column("item_kind", sqlmodel.sql.sqltypes.AutoString(length=12), nullable=False),
        sa.Column("outcome", sqlmodel.sql.sqltypes.AutoString(length=3), nullable=True),
        sa.Column("auto_tie", sa.Boolean(), nullable=False),
        sa.Column("order_ab", sqlmodel.sql.sqltypes.AutoString(length=12), nullable=True),
        sa.Column("order_ba", sqlmodel.sql.sqltypes.AutoString(length=12), nullable=True),
        sa.Column("consistent", sa.Boolean(), nullable=True),
        sa.Column("template", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("tokens_a", sa.Integer(), nullable=False),
        sa.Column("tokens_b", sa.Integer(), nullable=False),
        sa.Column("answer_ab", sa.Text(), nullable=True),
        sa.Column("answer_ba", sa.Text(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["judge_id"],
            ["judge.id"],
        ),
        sa.ForeignKeyConstraint(
            ["system_a_id"],
            ["system.id"],
        ),
        sa.ForeignKeyConstraint(
            ["system_b_id"],
            ["system.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "judge_id", "dataset_name", "prompt_id", "system_a_id", "system_b_id", name="uq_judgejudgement"
        ),
    )
    with op.batch_alter_table("judgejudgement", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judgejudgement_dataset_name"), ["dataset_name"], unique=False)
        batch_op.create_index(batch_op.f("ix_judgejudgement_judge_id"), ["judge_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_judgejudgement_system_a_id"), ["system_a_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_judgejudgement_system_b_id"), ["system_b_id"], unique=False)

    op.create_table(
        "judgingrun",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submission.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("judgingrun", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judgingrun_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_judgingrun_submission_id"), ["submission_id"], unique=False)

    op.create_table(
        "rubricgrade",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("attachment_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("rubric", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("signature", sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False),
        sa.Column("prompt_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
        sa.Column("criteria", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attachment_id"],
            ["datasetjudging.id"],
        ),
        sa.ForeignKeyConstraint(
            ["judge_id"],
            ["judge.id"],
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submission.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("submission_id", "attachment_id", "signature", "prompt_id", name="uq_rubricgrade"),
    )
    with op.batch_alter_table("rubricgrade", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rubricgrade_attachment_id"), ["attachment_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_rubricgrade_judge_id"), ["judge_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_rubricgrade_submission_id"), ["submission_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("rubricgrade", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rubricgrade_submission_id"))
        batch_op.drop_index(batch_op.f("ix_rubricgrade_judge_id"))
        batch_op.drop_index(batch_op.f("ix_rubricgrade_attachment_id"))

    op.drop_table("rubricgrade")
    with op.batch_alter_table("judgingrun", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judgingrun_submission_id"))
        batch_op.drop_index(batch_op.f("ix_judgingrun_status"))

    op.drop_table("judgingrun")
    with op.batch_alter_table("judgejudgement", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judgejudgement_system_b_id"))
        batch_op.drop_index(batch_op.f("ix_judgejudgement_system_a_id"))
        batch_op.drop_index(batch_op.f("ix_judgejudgement_judge_id"))
        batch_op.drop_index(batch_op.f("ix_judgejudgement_dataset_name"))

    op.drop_table("judgejudgement")
    with op.batch_alter_table("datasetjudging", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_datasetjudging_judge_id"))
        batch_op.drop_index(batch_op.f("ix_datasetjudging_dataset_name"))

    op.drop_table("datasetjudging")
    op.drop_table("judge")
