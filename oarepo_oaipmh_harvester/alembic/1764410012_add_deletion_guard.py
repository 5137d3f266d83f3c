"""The mass-deletion guard: a harvester's share, and the tracking rows' held deletions."""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "1764410012"
down_revision = "1764410011"
branch_labels = ()
depends_on = None


def upgrade():
    """Upgrade database."""
    op.add_column("oai_harvester", sa.Column("deletion_guard", sa.Float(), nullable=True))
    op.add_column("oai_harvested_record", sa.Column("held_deletion", sa.String(16), nullable=True))


def downgrade():
    """Downgrade database."""
    op.drop_column("oai_harvested_record", "held_deletion")
    op.drop_column("oai_harvester", "deletion_guard")
