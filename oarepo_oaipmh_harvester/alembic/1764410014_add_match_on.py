"""A harvester's identifier schemes for matching new records to local ones."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410014"
down_revision = "1764410013"
branch_labels = ()
depends_on = None


def upgrade():
    """Upgrade database."""
    json = sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )
    op.add_column("oai_harvester", sa.Column("match_on", json, nullable=True))


def downgrade():
    """Downgrade database."""
    op.drop_column("oai_harvester", "match_on")
