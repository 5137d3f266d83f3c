"""How a harvester writes into its target: owner, community, adapter and policies."""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "1764410003"
down_revision = "1764410002"
branch_labels = ()
depends_on = None

POLICIES = {
    "target_adapter": "auto",
    "local_drafts": "harvest-wins",
    "invalid_drafts": "discard",
    "doi_conflicts": "fail",
}


def upgrade():
    """Upgrade database."""
    op.add_column("oai_harvester", sa.Column("owner", sa.Integer(), nullable=True))
    op.add_column("oai_harvester", sa.Column("community", sa.String(255), nullable=True))
    for name, default in POLICIES.items():
        # The server default fills the existing rows; the model supplies it from then on.
        op.add_column(
            "oai_harvester",
            sa.Column(name, sa.String(32), nullable=False, server_default=default),
        )
        op.alter_column("oai_harvester", name, server_default=None)


def downgrade():
    """Downgrade database."""
    for name in (*reversed(POLICIES), "community", "owner"):
        op.drop_column("oai_harvester", name)
