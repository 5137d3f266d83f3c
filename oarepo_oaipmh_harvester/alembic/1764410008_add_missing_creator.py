"""Harvesters say what becomes of a record that names no creator (InvenioRDM transformers)."""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "1764410008"
down_revision = "1764410007"
branch_labels = ()
depends_on = None

TABLE = "oai_harvester"


def upgrade():
    """Upgrade database."""
    # NULL: the transformer's configured default (OAI_HARVESTER_RDM_MISSING_CREATOR).
    op.add_column(TABLE, sa.Column("missing_creator", sa.String(length=255), nullable=True))


def downgrade():
    """Downgrade database."""
    op.drop_column(TABLE, "missing_creator")
