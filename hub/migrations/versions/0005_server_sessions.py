"""server-side sessions and cohort invite caps

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "browsersession",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("id_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("id_sha256"),
    )
    op.create_index(op.f("ix_browsersession_user_id"), "browsersession", ["user_id"], unique=False)
    with op.batch_alter_table("user") as batch:
        batch.add_column(sa.Column("disabled_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    with op.batch_alter_table("raterinvite") as batch:
        batch.add_column(sa.Column("max_raters", sa.Integer(), nullable=False, server_default="50"))
        batch.add_column(sa.Column("rater_count", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("raterinvite") as batch:  # the defaults only filled existing rows
        batch.alter_column("max_raters", server_default=None)
        batch.alter_column("rater_count", server_default=None)
    with op.batch_alter_table("rater") as batch:
        batch.add_column(sa.Column("invite_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("client_hash", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True))
        batch.create_index(batch.f("ix_rater_invite_id"), ["invite_id"], unique=False)
        batch.create_index(batch.f("ix_rater_client_hash"), ["client_hash"], unique=False)
        batch.create_foreign_key("fk_rater_invite_id_raterinvite", "raterinvite", ["invite_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("rater") as batch:
        batch.drop_constraint("fk_rater_invite_id_raterinvite", type_="foreignkey")
        batch.drop_index(batch.f("ix_rater_client_hash"))
        batch.drop_index(batch.f("ix_rater_invite_id"))
        batch.drop_column("client_hash")
        batch.drop_column("invite_id")
    with op.batch_alter_table("raterinvite") as batch:
        batch.drop_column("rater_count")
        batch.drop_column("max_raters")
    with op.batch_alter_table("user") as batch:
        batch.drop_column("disabled_at")
    op.drop_index(op.f("ix_browsersession_user_id"), table_name="browsersession")
    op.drop_table("browsersession")
