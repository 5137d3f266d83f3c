"""Watermarks per scope (endpoint, metadata prefix, set)."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410002"
down_revision = "1764410001"
branch_labels = ()
depends_on = None


def upgrade():
    """Upgrade database."""
    op.add_column(
        "oai_harvester",
        sa.Column(
            "watermarks",
            sa.JSON(none_as_null=True).with_variant(
                postgresql.JSONB(none_as_null=True), "postgresql"
            ),
            nullable=True,
        ),
    )


def downgrade():
    """Downgrade database."""
    op.drop_column("oai_harvester", "watermarks")
