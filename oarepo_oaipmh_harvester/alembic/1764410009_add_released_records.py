"""The local records of deleted harvesters, kept for the harvester of the same provider."""

import sqlalchemy as sa
from alembic import op
from invenio_db.shared import UTCDateTime
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410009"
down_revision = "1764410008"
branch_labels = ()
depends_on = None

TABLE = "oai_harvester_released_record"


def upgrade():
    """Upgrade database."""
    json_type = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    op.create_table(
        TABLE,
        sa.Column("released_from", sa.String(length=64), nullable=False),
        sa.Column("oai_identifier", sa.String(length=1024), nullable=False),
        sa.Column("base_url", sa.String(length=2048), nullable=False),
        sa.Column("metadata_prefix", sa.String(length=255), nullable=False),
        sa.Column("setspecs", json_type, nullable=False),
        sa.Column("target", sa.String(length=255), nullable=False),
        sa.Column("local_pid", sa.String(length=255), nullable=False),
        sa.Column("datestamp", sa.String(length=64), nullable=True),
        sa.Column("warnings", json_type, nullable=True),
        sa.Column("original_xml", sa.Text(), nullable=True),
        sa.Column("transformed", json_type, nullable=True),
        sa.Column("harvested_at", UTCDateTime(), nullable=False),
        sa.Column("adopted", sa.Boolean(), nullable=False),
        sa.Column("released_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint(
            "released_from", "oai_identifier", name=op.f("pk_oai_harvester_released_record")
        ),
    )
    op.create_index("ix_oai_harvester_released_record_source", TABLE, ["target", "metadata_prefix"])


def downgrade():
    """Downgrade database."""
    op.drop_index("ix_oai_harvester_released_record_source", table_name=TABLE)
    op.drop_table(TABLE)
