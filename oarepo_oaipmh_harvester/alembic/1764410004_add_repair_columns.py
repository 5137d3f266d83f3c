"""Tracking rows remember retries (attempts, next attempt), purges and taken-over records."""

import sqlalchemy as sa
from alembic import op
from invenio_db.shared import UTCDateTime

# revision identifiers, used by Alembic.
revision = "1764410004"
down_revision = "1764410003"
branch_labels = ()
depends_on = None

TABLE = "oai_harvested_record"


def upgrade():
    """Upgrade database."""
    # Server defaults fill the existing rows; the model supplies the values from then on.
    columns = (
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("purged", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("adopted", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    for column in columns:
        op.add_column(TABLE, column)
        op.alter_column(TABLE, column.name, server_default=None)
    op.add_column(TABLE, sa.Column("next_attempt_at", UTCDateTime(), nullable=True))
    # A row that failed before this migration counts as one failed attempt.
    op.execute(sa.text(f"UPDATE {TABLE} SET attempts = 1 WHERE errors IS NOT NULL"))


def downgrade():
    """Downgrade database."""
    for name in ("next_attempt_at", "adopted", "purged", "attempts"):
        op.drop_column(TABLE, name)
