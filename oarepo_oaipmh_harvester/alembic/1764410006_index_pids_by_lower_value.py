"""An index on invenio-pidstore's PIDs by type and lower-cased value, for DOI holder look-ups."""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "1764410006"
down_revision = "1764410005"
branch_labels = ()
depends_on = "999c62899c20"  # invenio-pidstore: create pidstore tables

NAME = "ix_oai_harvester_pidstore_pid_lower_value"  # models.DOI_HOLDER_INDEX


def upgrade():
    """Upgrade database."""
    op.create_index(NAME, "pidstore_pid", ["pid_type", sa.text("lower(pid_value)")])


def downgrade():
    """Downgrade database."""
    op.drop_index(NAME, table_name="pidstore_pid")
