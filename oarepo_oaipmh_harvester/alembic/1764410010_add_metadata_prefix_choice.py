"""Harvesters keep why their metadata prefix was picked when the operator named none."""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "1764410010"
down_revision = "1764410009"
branch_labels = ()
depends_on = None

TABLE = "oai_harvester"


def upgrade():
    """Upgrade database."""
    # NULL: the operator named the prefix.
    op.add_column(TABLE, sa.Column("metadata_prefix_choice", sa.Text(), nullable=True))


def downgrade():
    """Downgrade database."""
    op.drop_column(TABLE, "metadata_prefix_choice")
