"""Watermarks per scope (endpoint, metadata prefix, set)."""

from datetime import UTC

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "1764410002"
down_revision = "1764410001"
branch_labels = ()
depends_on = None


def _json():
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )


def upgrade():
    """Upgrade database."""
    from oarepo_oaipmh_harvester.harvest.window import Scope

    op.add_column("oai_harvester", sa.Column("watermarks", _json(), nullable=True))
    # A stored watermark was earned on the configuration the harvester has now: it becomes the
    # watermark of each of its current scopes, so that a set added after the upgrade is
    # harvested in full rather than from a watermark it never earned.
    harvesters = sa.table(
        "oai_harvester",
        sa.column("id", sa.String),
        sa.column("base_url", sa.String),
        sa.column("metadata_prefix", sa.String),
        sa.column("setspecs", _json()),
        sa.column("watermark", sa.DateTime),
        sa.column("watermarks", _json()),
    )
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(
            harvesters.c.id,
            harvesters.c.base_url,
            harvesters.c.metadata_prefix,
            harvesters.c.setspecs,
            harvesters.c.watermark,
        ).where(harvesters.c.watermark.is_not(None))
    ).all()
    for row in rows:
        watermark = (
            row.watermark.replace(tzinfo=UTC) if row.watermark.tzinfo is None else row.watermark
        )
        scopes = [
            Scope(row.base_url, row.metadata_prefix, spec) for spec in (row.setspecs or [None])
        ]
        bind.execute(
            harvesters.update()
            .where(harvesters.c.id == row.id)
            .values(watermarks={scope.key: watermark.isoformat() for scope in scopes})
        )


def downgrade():
    """Downgrade database."""
    op.drop_column("oai_harvester", "watermarks")
