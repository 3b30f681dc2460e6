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


LIVE_UPLOAD = "status NOT IN ('rejected', 'failed')"
SAME_LIVE_UPLOAD_EARLIER = (
    "EXISTS (SELECT 1 FROM submission AS earlier WHERE earlier.owner_id = submission.owner_id"
    " AND earlier.dataset_name = submission.dataset_name AND earlier.responses_sha256 = submission.responses_sha256"
    " AND earlier.status NOT IN ('rejected', 'failed') AND earlier.id < submission.id)"
)


def upgrade() -> None:
    with op.batch_alter_table("submission") as batch:
        batch.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_submission_owner_id_user", "user", ["owner_id"], ["id"])
    op.execute("UPDATE submission SET owner_id = (SELECT owner_id FROM system WHERE system.id = submission.system_id)")
    # Duplicates the old check-then-insert let through keep their rows; only the earliest holds the unique key.
    op.execute(f"UPDATE submission SET owner_id = NULL WHERE {LIVE_UPLOAD} AND {SAME_LIVE_UPLOAD_EARLIER}")
    with op.batch_alter_table("submission") as batch:
        batch.create_index(
            "uq_submission_live_upload",
            ["owner_id", "dataset_name", "responses_sha256"],
            unique=True,
            sqlite_where=sa.text(LIVE_UPLOAD),
            postgresql_where=sa.text(LIVE_UPLOAD),
        )
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
    with op.batch_alter_table("submission") as batch:
        batch.drop_index("uq_submission_live_upload")
        batch.drop_constraint("fk_submission_owner_id_user", type_="foreignkey")
        batch.drop_column("owner_id")
    op.drop_index(op.f("ix_outboxjob_submission_id"), table_name="outboxjob")
    op.drop_table("outboxjob")
