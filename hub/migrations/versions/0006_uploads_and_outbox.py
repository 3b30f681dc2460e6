"""unique uploads and the job outbox

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 19:00:00

"""

from collections.abc import Sequence

# revision identifiers, used by Alembic.
revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # slot reserved for this change; filled by its commit


def downgrade() -> None:
    pass
