"""adaptive experiments: tasks released in rounds

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 07:05:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("experiment") as batch:
        batch.add_column(sa.Column("released_tasks", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiment") as batch:
        batch.drop_column("released_tasks")
