"""`invenio alembic upgrade` creates our tables, and the migrations match the models."""

import os

import pytest
import sqlalchemy as sa


@pytest.fixture(scope="module")
def db_uri():
    """A database of its own: the migrations must start from nothing."""
    base = os.environ.get("SQLALCHEMY_DATABASE_URI")
    if base and base.startswith("postgresql"):
        yield f"{base}_alembic"  # derived, so that parallel suites on other databases don't collide
    else:
        pytest.skip("Invenio's own migrations need PostgreSQL (SQLite cannot ALTER constraints).")


def test_upgrade_creates_tables_matching_models(appctx):
    from invenio_db import db
    from sqlalchemy_utils.functions import create_database, database_exists, drop_database

    alembic = appctx.extensions["invenio-db"].alembic
    url = db.engine.url.render_as_string(hide_password=False)
    if database_exists(url):
        drop_database(url)
    create_database(url)
    try:
        alembic.upgrade()
        tables = set(sa.inspect(db.engine).get_table_names())
        assert {"oai_harvester", "oai_harvested_record"} <= tables
        ours = ("oai_harvester", "oai_harvested_record")
        diff = [
            change
            for change in alembic.compare_metadata()
            if any(name in repr(change) for name in ours)
        ]
        assert diff == []
        alembic.downgrade(target="oarepo_oaipmh_harvester@base")
        assert "oai_harvester" not in set(sa.inspect(db.engine).get_table_names())
    finally:
        db.session.remove()
        db.engine.dispose()
        drop_database(url)
