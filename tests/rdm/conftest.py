"""An InvenioRDM records service (invenio-rdm-records 36) as the harvest target.

Booted like rdm-records' own tests: its config where the app needs it, stand-in UI endpoints
for the links of published records, the one vocabulary entry the test transformer uses, a
default files location. The only departures are osmem-server's gaps (no ``date_range``
histogram facet, no data streams). Without the ``rdm`` extra every test module here skips
itself (a skip raised by a conftest is an error), so this file imports RDM lazily.
"""

from __future__ import annotations

import pytest
from factories import frozen_corpus
from invenio_access.permissions import system_identity
from invenio_app.factory import create_api

from oarepo_oaipmh_harvester.testing.corpus import Corpus

from .transform import RESOURCE_TYPE, MinimalRDMTransformer

RDM_TARGET = "records"
TRANSFORMER = "rdm_minimal"


def _without_publication_date(search: dict) -> dict:
    """osmem refuses the ``yyyy`` format of the date_histogram over a date_range field."""
    return {**search, "facets": [f for f in search["facets"] if f != "publication_date"]}


@pytest.fixture(scope="module")
def app_config(app_config):
    from invenio_rdm_records import config as rdm_config

    # rdm-records is not a flavour extension: these keys of its config.py would lose to
    # other modules' defaults.
    for key in (
        "FILES_REST_PERMISSION_FACTORY",
        "PIDSTORE_RECID_FIELD",
        "RECORDS_PERMISSIONS_RECORD_POLICY",
        "RECORDS_REST_ENDPOINTS",
        "REQUESTS_PERMISSION_POLICY",
    ):
        app_config[key] = getattr(rdm_config, key, None)
    app_config.update(
        {
            "RDM_SEARCH": _without_publication_date(rdm_config.RDM_SEARCH),
            "RDM_SEARCH_DRAFTS": _without_publication_date(rdm_config.RDM_SEARCH_DRAFTS),
            "APP_RDM_ROUTES": {
                "record_detail": "/records/<pid_value>",
                "record_file_download": "/records/<pid_value>/files/<path:filename>",
            },
            "THEME_FRONTPAGE": False,
            "RDM_USER_MODERATION_ENABLED": False,
            "OAI_HARVESTER_TRANSFORMERS": {TRANSFORMER: MinimalRDMTransformer},
        }
    )
    return app_config


@pytest.fixture(scope="module")
def extra_entry_points():
    return {
        "invenio_base.blueprints": [
            "invenio_app_rdm_records = rdm.stand_ins:create_records_ui_blueprint",
        ],
    }


@pytest.fixture(scope="module")
def create_app(instance_path, entry_points):
    return create_api


@pytest.fixture(scope="module")
def rdm_vocabularies(app):
    """The resource type the test transformer gives every record."""
    from invenio_vocabularies.proxies import current_service as vocabularies

    vocabularies.create_type(system_identity, "resourcetypes", "rsrct")
    vocabularies.create(
        system_identity,
        {
            "id": RESOURCE_TYPE,
            "type": "resourcetypes",
            "title": {"en": "Publication"},
            "tags": ["depositable", "linkable"],
            "props": {
                "csl": "report",
                "datacite_general": "Text",
                "datacite_type": "",
                "openaire_resourceType": "0017",
                "openaire_type": "publication",
                "eurepo": "info:eu-repo/semantics/other",
                "schema.org": "https://schema.org/CreativeWork",
                "subtype": "",
                "type": RESOURCE_TYPE,
                "marc21_type": "publication",
                "marc21_subtype": "",
            },
        },
    )


@pytest.fixture(scope="module")
def rdm_location(database):
    """Every draft gets a bucket, metadata-only ones too."""
    import tempfile

    from invenio_files_rest.models import Location

    location = Location(name="rdm-test", uri=tempfile.mkdtemp(), default=True)
    database.session.add(location)
    database.session.commit()
    return location


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
