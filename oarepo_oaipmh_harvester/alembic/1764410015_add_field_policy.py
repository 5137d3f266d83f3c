"""A harvester's per-field policies for local edits, and the conflicts of each record."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410015"
down_revision = "1764410014"
branch_labels = ()
depends_on = None


def upgrade():
    """Upgrade database."""
    json = sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )
    op.add_column("oai_harvester", sa.Column("field_policy", json, nullable=True))
    op.add_column("oai_harvested_record", sa.Column("conflicts", json, nullable=True))
    op.add_column("oai_harvester_run_change", sa.Column("conflicts", json, nullable=True))


def downgrade():
    """Downgrade database."""
    op.drop_column("oai_harvester_run_change", "conflicts")
    op.drop_column("oai_harvested_record", "conflicts")
    op.drop_column("oai_harvester", "field_policy")
