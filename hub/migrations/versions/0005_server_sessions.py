"""server-side sessions and cohort invite caps

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:00:00

"""

from collections.abc import Sequence

# revision identifiers, used by Alembic.
revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # slot reserved for this change; filled by its commit


def downgrade() -> None:
    pass
