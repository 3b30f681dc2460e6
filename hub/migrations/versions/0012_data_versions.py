"""data versions of the public read side

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 22:40:00

"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # One row per scope; every write that changes public pages bumps it in its own transaction, and every public
    # request reads it (by primary key) to key its cached view-models.
    table = op.create_table(
        "data_version",
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("changed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("scope"),
    )
    op.bulk_insert(table, [{"scope": "global", "version": 1, "changed_at": datetime.now(UTC)}])


def downgrade() -> None:
    op.drop_table("data_version")
