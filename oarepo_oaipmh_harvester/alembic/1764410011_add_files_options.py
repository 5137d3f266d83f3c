"""Harvesters say what becomes of a record's files; tracking rows keep the files written."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410011"
down_revision = "1764410010"
branch_labels = ()
depends_on = None

HARVESTERS = "oai_harvester"
RECORDS = "oai_harvested_record"


def _json():
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )


def upgrade():
    """Upgrade database."""
    # Existing harvesters keep today's behaviour: metadata only.
    op.add_column(
        HARVESTERS, sa.Column("files", sa.String(32), nullable=False, server_default="none")
    )
    op.add_column(
        HARVESTERS,
        sa.Column("files_failure", sa.String(32), nullable=False, server_default="metadata-only"),
    )
    op.add_column(
        HARVESTERS,
        sa.Column("files_changes", sa.String(32), nullable=False, server_default="new-version"),
    )
    op.add_column(HARVESTERS, sa.Column("files_max_size", sa.BigInteger(), nullable=True))
    op.add_column(HARVESTERS, sa.Column("files_hosts", _json(), nullable=True))
    op.add_column(
        HARVESTERS,
        sa.Column("files_restricted", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    # The server defaults fill the existing rows; the model supplies them from then on.
    for column in ("files", "files_failure", "files_changes", "files_restricted"):
        op.alter_column(HARVESTERS, column, server_default=None)
    op.add_column(RECORDS, sa.Column("files", _json(), nullable=True))


def downgrade():
    """Downgrade database."""
    op.drop_column(RECORDS, "files")
    for column in (
        "files_restricted",
        "files_hosts",
        "files_max_size",
        "files_changes",
        "files_failure",
        "files",
    ):
        op.drop_column(HARVESTERS, column)
