"""Create the oarepo_oaipmh_harvester alembic branch."""

# revision identifiers, used by Alembic.
revision = "1764410000"
down_revision = None
branch_labels = ("oarepo_oaipmh_harvester",)
depends_on = "dbdbc1b19cf2"


def upgrade():
    """Upgrade database."""


def downgrade():
    """Downgrade database."""
