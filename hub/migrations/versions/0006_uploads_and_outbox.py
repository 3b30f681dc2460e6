"""unique uploads and the job outbox

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 19:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outboxjob",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submission.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_outboxjob_submission_id"), "outboxjob", ["submission_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_outboxjob_submission_id"), table_name="outboxjob")
    op.drop_table("outboxjob")
