"""The tracked records whose search document is not known to be in the index."""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "1764410007"
down_revision = "1764410006"
branch_labels = ()
depends_on = None


def upgrade():
    """Upgrade database."""
    op.create_table(
        "oai_harvester_unindexed",
        sa.Column("harvester_id", sa.String(length=64), nullable=False),
        sa.Column("oai_identifier", sa.String(length=1024), nullable=False),
        sa.ForeignKeyConstraint(
            ["harvester_id", "oai_identifier"],
            ["oai_harvested_record.harvester_id", "oai_harvested_record.oai_identifier"],
            name=op.f("fk_oai_harvester_unindexed_harvester_id_oai_harvested_record"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "harvester_id", "oai_identifier", name=op.f("pk_oai_harvester_unindexed")
        ),
    )
    # Records an earlier version found the index refusing: the next run sends them first.
    op.execute(
        "INSERT INTO oai_harvester_unindexed (harvester_id, oai_identifier) "
        "SELECT harvester_id, oai_identifier FROM oai_harvested_record "
        "WHERE local_pid IS NOT NULL AND CAST(errors AS TEXT) LIKE '%Not indexed:%'"
    )


def downgrade():
    """Downgrade database."""
    op.drop_table("oai_harvester_unindexed")
