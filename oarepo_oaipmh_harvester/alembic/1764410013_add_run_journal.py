"""The run journal: what each run changed, so that one run can be undone."""

import sqlalchemy as sa
import sqlalchemy_utils
from alembic import op
from invenio_db.shared import UTCDateTime
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410013"
down_revision = "1764410012"
branch_labels = ()
depends_on = None


def _json():
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )


def upgrade():
    """Upgrade database."""
    op.create_table(
        "oai_harvester_run_journal",
        sa.Column("run_id", sqlalchemy_utils.types.uuid.UUIDType(), nullable=False),
        sa.Column("harvester_id", sa.String(64), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("watermark", UTCDateTime(), nullable=True),
        sa.Column("watermarks", _json(), nullable=True),
        sa.Column("undo_of", sqlalchemy_utils.types.uuid.UUIDType(), nullable=True),
        sa.Column("undone_by", sqlalchemy_utils.types.uuid.UUIDType(), nullable=True),
        sa.ForeignKeyConstraint(
            ["harvester_id"],
            ["oai_harvester.id"],
            name=op.f("fk_oai_harvester_run_journal_harvester_id_oai_harvester"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_oai_harvester_run_journal")),
    )
    op.create_index(
        "ix_oai_harvester_run_journal_harvester", "oai_harvester_run_journal", ["harvester_id"]
    )
    op.create_table(
        "oai_harvester_run_change",
        sa.Column("run_id", sqlalchemy_utils.types.uuid.UUIDType(), nullable=False),
        sa.Column("oai_identifier", sa.String(1024), nullable=False),
        sa.Column("harvester_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("existed", sa.Boolean(), nullable=False),
        sa.Column("datestamp", sa.String(64), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=True),
        sa.Column("local_pid", sa.String(255), nullable=True),
        sa.Column("errors", _json(), nullable=True),
        sa.Column("warnings", _json(), nullable=True),
        sa.Column("original_xml", sa.Text(), nullable=True),
        sa.Column("transformed", _json(), nullable=True),
        sa.Column("harvested_at", UTCDateTime(), nullable=True),
        sa.Column("previous_run_id", sqlalchemy_utils.types.uuid.UUIDType(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=True),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("purged", sa.Boolean(), nullable=True),
        sa.Column("adopted", sa.Boolean(), nullable=True),
        sa.Column("files", _json(), nullable=True),
        sa.Column("held_deletion", sa.String(16), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["oai_harvester_run_journal.run_id"],
            name=op.f("fk_oai_harvester_run_change_run_id_oai_harvester_run_journal"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "run_id", "oai_identifier", name=op.f("pk_oai_harvester_run_change")
        ),
    )
    op.create_index(
        "ix_oai_harvester_run_change_identifier",
        "oai_harvester_run_change",
        ["harvester_id", "oai_identifier"],
    )


def downgrade():
    """Downgrade database."""
    op.drop_index("ix_oai_harvester_run_change_identifier", table_name="oai_harvester_run_change")
    op.drop_table("oai_harvester_run_change")
    op.drop_index("ix_oai_harvester_run_journal_harvester", table_name="oai_harvester_run_journal")
    op.drop_table("oai_harvester_run_journal")
