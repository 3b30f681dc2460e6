"""provisional results and held-out raters

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 19:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # an admin's decision on a rater (include or exclude) releases judgements the screening holds out
    with op.batch_alter_table("rater") as batch_op:
        batch_op.add_column(sa.Column("reviewed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rater") as batch_op:
        batch_op.drop_column("reviewed_at")
