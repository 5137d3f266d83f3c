"""Create the harvester and harvested-record tables."""

import sqlalchemy as sa
import sqlalchemy_utils
from alembic import op
from invenio_db.shared import UTCDateTime
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410001"
down_revision = "1764410000"
branch_labels = ()
depends_on = None


def _json():
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )


def upgrade():
    """Upgrade database."""
    op.create_table(
        "oai_harvester",
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("updated", UTCDateTime(), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("base_url", sa.String(length=2048), nullable=False),
        sa.Column("metadata_prefix", sa.String(length=255), nullable=False),
        sa.Column("setspecs", _json(), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=False),
        sa.Column("transformer", sa.String(length=255), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("harvest_managers", _json(), nullable=False),
        sa.Column("request_delay", sa.Float(), nullable=True),
        sa.Column("watermark", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oai_harvester")),
    )
    op.create_table(
        "oai_harvested_record",
        sa.Column("harvester_id", sa.String(length=64), nullable=False),
        sa.Column("oai_identifier", sa.String(length=1024), nullable=False),
        sa.Column("datestamp", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("local_pid", sa.String(length=255), nullable=True),
        sa.Column("errors", _json(), nullable=True),
        sa.Column("warnings", _json(), nullable=True),
        sa.Column("original_xml", sa.Text(), nullable=True),
        sa.Column("transformed", _json(), nullable=True),
        sa.Column("harvested_at", UTCDateTime(), nullable=False),
        sa.Column("run_id", sqlalchemy_utils.types.uuid.UUIDType(), nullable=True),
        sa.ForeignKeyConstraint(
            ["harvester_id"],
            ["oai_harvester.id"],
            name=op.f("fk_oai_harvested_record_harvester_id_oai_harvester"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "harvester_id", "oai_identifier", name=op.f("pk_oai_harvested_record")
        ),
    )
    op.create_index(
        "ix_oai_harvested_record_local_pid",
        "oai_harvested_record",
        ["local_pid"],
        unique=False,
    )


def downgrade():
    """Downgrade database."""
    op.drop_index("ix_oai_harvested_record_local_pid", table_name="oai_harvested_record")
    op.drop_table("oai_harvested_record")
    op.drop_table("oai_harvester")
