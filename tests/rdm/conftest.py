"""An InvenioRDM records service (invenio-rdm-records 36) as the harvest target.

Booted like rdm-records' own tests (``oarepo_oaipmh_harvester.testing.rdm``, shared with the
demo and the benchmark): its config where the app needs it, stand-in UI endpoints for the
links of published records, a few real vocabulary entries of each type, a default files
location. The only departures are osmem-server's gaps (no ``date_range``
histogram facet, no data streams). Without the ``rdm`` extra every test module here skips
itself (a skip raised by a conftest is an error), so this file imports RDM lazily.
"""

from __future__ import annotations

import pytest
from factories import frozen_corpus
from invenio_app.factory import create_api

from oarepo_oaipmh_harvester.testing.corpus import Corpus

from .transform import MinimalRDMTransformer

RDM_TARGET = "records"
TRANSFORMER = "rdm_minimal"


@pytest.fixture(scope="module")
def app_config(app_config):
    from oarepo_oaipmh_harvester.testing.rdm import rdm_config

    app_config.update(rdm_config(external_dois=False))
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {TRANSFORMER: MinimalRDMTransformer}
    return app_config


@pytest.fixture(scope="module")
def extra_entry_points():
    from oarepo_oaipmh_harvester.testing.rdm import UI_BLUEPRINT_ENTRY_POINTS

    return {"invenio_base.blueprints": UI_BLUEPRINT_ENTRY_POINTS}


@pytest.fixture(scope="module")
def create_app(instance_path, entry_points):
    return create_api


@pytest.fixture(scope="module")
def rdm_vocabularies(app):
    """Real InvenioRDM vocabulary entries (rdm-records' fixture files), a few of each."""
    from oarepo_oaipmh_harvester.testing.rdm import load_vocabularies

    load_vocabularies()


@pytest.fixture(scope="module")
def rdm_location(database):
    from oarepo_oaipmh_harvester.testing.rdm import create_default_location

    return create_default_location()


@pytest.fixture()
def rdm_index(app, search):
    """Empty record and draft indices for this test (the vocabularies stay indexed)."""
    from invenio_rdm_records.records.api import RDMDraft, RDMRecord
    from invenio_search import current_search

    names = [RDMRecord.index._name, RDMDraft.index._name]
    list(current_search.delete(index_list=names, ignore=[404]))
    # The aliases stay (older mapping versions' indices hold them); only the two indices
    # are created again, so no alias gets a second write index.
    list(current_search.create(index_list=names, ignore_existing=True))
    yield


@pytest.fixture()
def rdm(app, db, rdm_vocabularies, rdm_location, rdm_index):
    """The RDM records service, ready to publish into."""
    from invenio_rdm_records.proxies import current_rdm_records_service

    return current_rdm_records_service


@pytest.fixture()
def corpus() -> Corpus:
    """A few records: RDM publishes about four a second on this machine."""
    return frozen_corpus(6)
