"""Harvesters can be paused, carry encrypted provider credentials and map sets to communities."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410005"
down_revision = "1764410004"
branch_labels = ()
depends_on = None

TABLE = "oai_harvester"


def upgrade():
    """Upgrade database."""
    # A server default fills the existing rows (every stored harvester stays active).
    op.add_column(
        TABLE, sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.true())
    )
    op.alter_column(TABLE, "active", server_default=None)
    op.add_column(TABLE, sa.Column("credentials", sa.Text(), nullable=True))
    json_type = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    op.add_column(TABLE, sa.Column("set_communities", json_type, nullable=True))


def downgrade():
    """Downgrade database."""
    for name in ("set_communities", "credentials", "active"):
        op.drop_column(TABLE, name)
