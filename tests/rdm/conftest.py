"""An InvenioRDM records service (invenio-rdm-records 32 or 36) as the harvest target.

Booted like rdm-records' own tests (``oaiharvest_test_support.rdm``, shared with the
demo and the benchmark): its config where the app needs it, stand-in UI endpoints for the
links of published records, a few real vocabulary entries of each type, a default files
location, on the session's real OpenSearch node. Without the ``rdm`` extra every test module here skips
itself (a skip raised by a conftest is an error), so this file imports RDM lazily.
"""

from __future__ import annotations

import time

import pytest
from factories import frozen_corpus
from invenio_app.factory import create_api

from oarepo_oaipmh_harvester.testing.corpus import Corpus

from .transform import MinimalRDMTransformer

RDM_TARGET = "records"
TRANSFORMER = "rdm_minimal"


@pytest.fixture(scope="module")
def app_config(app_config):
    from oaiharvest_test_support.rdm import rdm_config

    app_config.update(rdm_config(external_dois=False))
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {TRANSFORMER: MinimalRDMTransformer}
    return app_config


@pytest.fixture(scope="module")
def extra_entry_points():
    from oaiharvest_test_support.rdm import ui_blueprint_entry_points

    return {"invenio_base.blueprints": ui_blueprint_entry_points()}


@pytest.fixture(scope="module")
def create_app(instance_path, entry_points):
    return create_api


@pytest.fixture(scope="module")
def rdm_vocabularies(app):
    """Real InvenioRDM vocabulary entries (rdm-records' fixture files), a few of each."""
    from oaiharvest_test_support.rdm import load_vocabularies

    load_vocabularies()


@pytest.fixture(scope="module")
def rdm_location(database):
    from oaiharvest_test_support.rdm import create_default_location

    return create_default_location()


@pytest.fixture()
def rdm_index(app, search):
    """Empty record and draft indices for this test (the vocabularies stay indexed)."""
    from invenio_rdm_records.records.api import RDMDraft, RDMRecord
    from invenio_search.utils import build_alias_name
    from search_node import empty_search_indices

    empty_search_indices([build_alias_name(i._name) for i in (RDMRecord.index, RDMDraft.index)])
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


# -- invenio-oaiserver as a provider ---------------------------------------------------------------
SOURCE_TIMES: list[str] = []
"""What starting and stopping the invenio-oaiserver source cost, for the terminal summary."""


def pytest_terminal_summary(terminalreporter) -> None:
    if SOURCE_TIMES:
        terminalreporter.write_line(f"invenio-oaiserver source: {'; '.join(SOURCE_TIMES)}")


@pytest.fixture(scope="session")
def oaiserver_source(search_server):
    """A real InvenioRDM instance serving OAI-PMH (tests/rdm/oaiserver_source.py), one process
    for the session: it takes 20-30 s to boot, and `oai_source` gives every test empty lists.

    Its database is the suite's with ``_source`` appended, its index prefix is named after that
    database, its search server is the session's (a real node, or the cluster of SEARCH_HOSTS). It is
    launched here and waited for by `oai_source`: session fixtures come first, so it boots
    while the module's app does.
    """
    import os

    pytest.importorskip("invenio_rdm_records")
    from .oaiserver_source import OAIServerSource, derived_database_uri

    suite_uri = os.environ.get("SQLALCHEMY_DATABASE_URI", "")
    if not suite_uri.startswith("postgresql"):
        pytest.skip("The invenio-oaiserver source runs on PostgreSQL (SQLALCHEMY_DATABASE_URI).")
    source = OAIServerSource.launch(
        database_uri=derived_database_uri(suite_uri), search_hosts=search_server
    )
    try:
        yield source
    finally:
        if source.port is not None:
            phases = ", ".join(f"{name} {sec:.1f} s" for name, sec in source.boot_phases.items())
            SOURCE_TIMES.append(f"ready {source.startup_seconds:.1f} s after launch ({phases})")
        stopping = time.monotonic()
        source.stop()
        SOURCE_TIMES.append(f"stopped in {time.monotonic() - stopping:.1f} s")


@pytest.fixture()
def oai_source(oaiserver_source):
    """The source with no records listed, no sets, page size 10 and 60 s tokens (its defaults)."""
    oaiserver_source.wait_ready()
    oaiserver_source.reset()
    return oaiserver_source
