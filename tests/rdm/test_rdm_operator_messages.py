"""What an operator reads when InvenioRDM itself is not ready for a harvest (issue 39, 6)."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester
from invenio_db import db

from oarepo_oaipmh_harvester.cli import oai

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import published_titles, tracking


@pytest.fixture()
def without_a_default_location(rdm):
    """The site's files locations, none of them the default (as on a site where nobody ran
    `invenio files location create --default`)."""
    from invenio_files_rest.models import Location

    default = Location.get_default()
    default.default = False
    db.session.commit()
    yield
    default.default = True
    db.session.commit()


def test_no_default_files_location_is_named_with_its_fix(
    app, rdm, provider, corpus, without_a_default_location
):
    from invenio_files_rest.models import Location

    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    runner = app.test_cli_runner()
    result = runner.invoke(oai, ["harvest", "test"])

    assert result.exit_code == 1, result.output
    assert "'NoneType' object has no attribute 'id'" not in result.output
    assert "InvenioRDM has no default files location" in result.output
    rows = tracking()
    assert len(rows) == 6 and published_titles(rdm) == {}
    for row in rows.values():
        (error,) = row.errors
        assert error.startswith("NoDefaultFilesLocation: InvenioRDM has no default files location")
        assert "`invenio files location create --default <name> <uri>`" in error

    # The fix it names is the fix: with a default location the next run publishes them all.
    location = Location.query.first()
    location.default = True
    db.session.commit()
    result = runner.invoke(oai, ["harvest", "test"])
    assert result.exit_code == 0, result.output
    assert len(published_titles(rdm)) == 6
