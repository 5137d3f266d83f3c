"""`invenio alembic upgrade` creates our tables, and the migrations match the models."""

import os

import pytest
import sqlalchemy as sa

from oarepo_oaipmh_harvester.models import DOI_HOLDER_INDEX


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
        # The index for DOI holder look-ups is not on invenio-pidstore's model (see
        # models.py), so alembic, comparing with the models, would drop it.
        changes = [
            (change[0], getattr(change[1], "name", None)) if isinstance(change, tuple) else change
            for change in diff
        ]
        assert changes == [("remove_index", DOI_HOLDER_INDEX)], diff
        assert DOI_HOLDER_INDEX in _pidstore_indices(db)
        _a_stored_watermark_becomes_the_watermark_of_each_current_scope(alembic, db)
        alembic.downgrade(target="oarepo_oaipmh_harvester@base")
        assert "oai_harvester" not in set(sa.inspect(db.engine).get_table_names())
        assert DOI_HOLDER_INDEX not in _pidstore_indices(db)
    finally:
        db.session.remove()
        db.engine.dispose()
        drop_database(url)


def _pidstore_indices(db) -> set[str]:
    return {index["name"] for index in sa.inspect(db.engine).get_indexes("pidstore_pid")}


def _a_stored_watermark_becomes_the_watermark_of_each_current_scope(alembic, db) -> None:
    from oarepo_oaipmh_harvester.harvest.window import Scope

    # A Script object, because digits alone would be read as a number of steps.
    alembic.downgrade(target=alembic.script_directory.get_revision("1764410001"))
    with db.engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO oai_harvester (created, updated, id, name, base_url, "
                "metadata_prefix, setspecs, target, transformer, batch_size, harvest_managers, "
                "watermark) VALUES (now(), now(), 'old', 'Old', 'https://oai.example.org/oai', "
                "'oai_dc', '[\"math\", \"phys\"]', 'records', 'oai_dc', 100, '[]', "
                "'2024-06-01 12:00:00')"
            )
        )
    alembic.upgrade()
    with db.engine.connect() as connection:
        stored, *policies = connection.execute(
            sa.text(
                "SELECT watermarks, target_adapter, local_drafts, invalid_drafts, "
                "doi_conflicts, owner, community FROM oai_harvester WHERE id = 'old'"
            )
        ).one()
        connection.execute(sa.text("DELETE FROM oai_harvester WHERE id = 'old'"))
        connection.commit()
    expected = {
        Scope("https://oai.example.org/oai", "oai_dc", spec).key: "2024-06-01T12:00:00+00:00"
        for spec in ("math", "phys")
    }
    assert stored == expected
    # Harvesters that existed before the target options keep today's behaviour.
    assert policies == ["auto", "harvest-wins", "discard", "fail", None, None]
