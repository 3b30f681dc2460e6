"""evaluation leases: which worker runs an evaluation, how many runs, how many lost workers

Revision ID: 0010
Revises: 0007
Create Date: 2026-11-23 22:30:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0010"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A job's loss visible: the worker holding it (host:pid), when its run started, how many runs it took, and how
    # many of them ended with the worker lost (a stale heartbeat) before the retry.
    with op.batch_alter_table("submission") as batch_op:
        batch_op.add_column(sa.Column("worker_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True))
        batch_op.add_column(sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("worker_losses", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("submission") as batch_op:
        batch_op.drop_column("worker_losses")
        batch_op.drop_column("attempts")
        batch_op.drop_column("started_at")
        batch_op.drop_column("worker_id")
