"""notifications, the e-mail outbox, password resets, and withdrawn submissions

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 23:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_LIVE_UPLOAD = "status NOT IN ('rejected', 'failed')"
LIVE_UPLOAD = "status NOT IN ('rejected', 'failed', 'withdrawn')"


def _live_upload_index(where: str) -> None:
    with op.batch_alter_table("submission") as batch:
        batch.drop_index("uq_submission_live_upload")
    with op.batch_alter_table("submission") as batch:
        batch.create_index(
            "uq_submission_live_upload",
            ["owner_id", "dataset_name", "responses_sha256"],
            unique=True,
            sqlite_where=sa.text(where),
            postgresql_where=sa.text(where),
        )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # A new value of the native enum type; committed on its own so later statements may use it.
        with op.get_context().autocommit_block():
            op.execute("ALTER TYPE submissionstatus ADD VALUE IF NOT EXISTS 'withdrawn'")
    _live_upload_index(LIVE_UPLOAD)  # a withdrawn file no longer blocks submitting it again
    op.create_table(
        "notification",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("target", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
        sa.Column("subject", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("body", sqlmodel.sql.sqltypes.AutoString(length=5000), nullable=False),
        sa.Column("link", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("read_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_notification_user_id"), "notification", ["user_id"], unique=False)
    op.create_index(op.f("ix_notification_created_at"), "notification", ["created_at"], unique=False)
    op.create_table(
        "outgoingmail",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("to_address", sqlmodel.sql.sqltypes.AutoString(length=320), nullable=False),
        sa.Column("subject", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("body", sqlmodel.sql.sqltypes.AutoString(length=10000), nullable=False),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("sent_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_outgoingmail_state"), "outgoingmail", ["state"], unique=False)
    op.create_table(
        "passwordreset",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_sha256"),
    )
    op.create_index(op.f("ix_passwordreset_user_id"), "passwordreset", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_passwordreset_user_id"), table_name="passwordreset")
    op.drop_table("passwordreset")
    op.drop_index(op.f("ix_outgoingmail_state"), table_name="outgoingmail")
    op.drop_table("outgoingmail")
    op.drop_index(op.f("ix_notification_created_at"), table_name="notification")
    op.drop_index(op.f("ix_notification_user_id"), table_name="notification")
    op.drop_table("notification")
    op.execute("UPDATE submission SET status = 'failed' WHERE status = 'withdrawn'")
    _live_upload_index(OLD_LIVE_UPLOAD)  # PostgreSQL keeps the enum value (it cannot drop one); it is unused
