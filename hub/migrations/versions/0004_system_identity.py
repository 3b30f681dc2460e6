"""system names: unique canonical key (NFKC, case fold, confusable skeleton)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 19:00:00

Adds system.public_name_key (hub.system_names.name_key of the name while the system is public or a baseline, else
NULL) with a unique index, and fills it for existing rows. Public systems whose names already look alike (allowed
before) keep their rows and their publication: baselines first, then by id, the first of each look-alike group holds
the key and the others stay unkeyed (NULL). Statistics tell them apart by id.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from hub.system_names import name_key

# revision identifiers, used by Alembic.
revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("system") as batch:
        batch.add_column(sa.Column("public_name_key", sa.String(length=64), nullable=True))
    connection = op.get_bind()
    system = sa.table(
        "system",
        sa.column("id", sa.Integer),
        sa.column("name", sa.String),
        sa.column("is_public", sa.Boolean),
        sa.column("is_baseline", sa.Boolean),
        sa.column("public_name_key", sa.String),
    )
    query = (
        sa.select(system.c.id, system.c.name)
        .where(sa.or_(system.c.is_public, system.c.is_baseline))
        .order_by(system.c.is_baseline.desc(), system.c.id)
    )
    taken: set[str] = set()
    for system_id, name in connection.execute(query).all():
        key = name_key(name)
        if key in taken:
            continue  # a look-alike of an earlier public system: kept, unkeyed
        taken.add(key)
        connection.execute(sa.update(system).where(system.c.id == system_id).values(public_name_key=key))
    with op.batch_alter_table("system") as batch:
        batch.create_index(batch.f("ix_system_public_name_key"), ["public_name_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("system") as batch:
        batch.drop_index(batch.f("ix_system_public_name_key"))
        batch.drop_column("public_name_key")
