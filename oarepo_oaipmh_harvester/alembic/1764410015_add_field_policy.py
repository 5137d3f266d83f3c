"""A harvester's per-field policies for local edits and its dedupe policy; the conflicts of
each record and whether it links to another harvester's record."""

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
    op.add_column(
        "oai_harvester",
        sa.Column("dedupe", sa.String(32), nullable=False, server_default="off"),
    )
    op.add_column(
        "oai_harvested_record",
        sa.Column("linked", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("oai_harvester_run_change", sa.Column("linked", sa.Boolean(), nullable=True))
    # The server defaults fill the existing rows; the model supplies them from then on.
    op.alter_column("oai_harvester", "dedupe", server_default=None)
    op.alter_column("oai_harvested_record", "linked", server_default=None)


def downgrade():
    """Downgrade database."""
    op.drop_column("oai_harvester_run_change", "linked")
    op.drop_column("oai_harvested_record", "linked")
    op.drop_column("oai_harvester", "dedupe")
    op.drop_column("oai_harvester_run_change", "conflicts")
    op.drop_column("oai_harvested_record", "conflicts")
    op.drop_column("oai_harvester", "field_policy")
