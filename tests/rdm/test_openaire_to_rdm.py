"""The ``oai_openaire_rdm`` transformer (OpenAIRE Guidelines v4 literature records) against the
real RDM records service, and harvested through OAI-PMH from the bundled provider's
``oai_openaire`` prefix."""

from __future__ import annotations

import configparser
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity

from oarepo_oaipmh_harvester.testing.corpus_openaire import (
    OPENAIRE_PREFIX,
    openaire_corpus,
    openaire_document,
    openaire_documents,
)
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider
from oarepo_oaipmh_harvester.transformers import TransformError
from oarepo_oaipmh_harvester.transformers.rdm.openaire import (
    OpenAIRERDMTransformer,
    openaire_resource,
)
from oarepo_oaipmh_harvester.transformers.rdm.openaire_funding import grant_parts
from oarepo_oaipmh_harvester.transformers.rdm.openaire_tables import (
    COAR_RESOURCE_TYPE,
    coar_id,
)

from .conftest import RDM_TARGET
from .helpers import tracking
from .test_datacite_to_rdm import harvested
from .test_dc_to_rdm import publish
from .test_lido_to_rdm import holds, row_datestamp

TRANSFORMER = "oai_openaire_rdm"
ROOT = Path(__file__).resolve().parents[2]
AWARD_ID = "00k4n6c32::755021"
DFG = "018mejw64"
EXTRA_VOCABULARIES = {
    "resourcetypes": (
        "rsrct",
        "resource_types.yaml",
        (
            "publication-section",
            "publication-dissertation",
            "publication-conferencepaper",
            "publication-preprint",
            "publication-peerreview",
            "publication-datapaper",
            "publication-workingpaper",
            "publication-deliverable",
            "publication-technicalnote",
            "publication-proposal",
            "publication-conferenceproceeding",
            "publication-other",
            "poster",
            "presentation",
            "video",
            "audio",
            "lesson",
            "workflow",
        ),
    ),
    "licenses": ("lic", "licenses.csv", ("cc-by-nc-4.0",)),
    "relationtypes": ("rlt", "relation_types.yaml", ("isidenticalto",)),
    "languages": ("lng", "languages.yaml", ("spa", "swe", "ita", "por", "nld")),
}


# -- no application --------------------------------------------------------------------------
def test_setup_cfg_declares_the_entry_point():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    declared = config["options.entry_points"]["oarepo_oaipmh_harvester.transformers"]
    assert (
        "oai_openaire_rdm = oarepo_oaipmh_harvester.transformers.rdm.openaire:"
        "OpenAIRERDMTransformer" in declared.splitlines()
    )


def test_coar_ids_project_ids_and_the_resource_element():
    from lxml import etree

    assert coar_id("http://purl.org/coar/resource_type/c_6501", COAR_RESOURCE_TYPE) == "c_6501"
    assert coar_id("https://purl.org/coar/resource_type/c_6501/", COAR_RESOURCE_TYPE) == "c_6501"
    assert coar_id("info:eu-repo/semantics/article", COAR_RESOURCE_TYPE) is None
    assert grant_parts("info:eu-repo/grantAgreement/EC/FP7/283595/EU//ACRO") == [
        "EC",
        "FP7",
        "283595",
        "EU",
        "",
        "ACRO",
    ]
    assert grant_parts("https://cordis.europa.eu/project/id/755021") == []
    root = etree.fromstring(openaire_document("1"))
    assert openaire_resource(root, "x") is root
    with pytest.raises(TransformError, match="no OpenAIRE oaire:resource"):
        openaire_resource(etree.fromstring("<resource xmlns='http://datacite.org/schema/kernel-4'/>"), "x")
    with pytest.raises(TransformError, match="has no metadata"):
        openaire_resource(None, "oai:x:1")


# -- against the RDM app ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def app_config(app_config):
    """External DOIs off (RDM's default: DOIs go into identifiers), the journal, imprint and
    meeting custom fields a site adds from invenio-rdm-records' contrib, the transformer
    registered by configuration too (the venv's entry points may be another worktree's)."""
    from invenio_rdm_records import config as rdm
    from invenio_rdm_records.contrib.imprint import IMPRINT_CUSTOM_FIELDS, IMPRINT_NAMESPACE
    from invenio_rdm_records.contrib.journal import JOURNAL_CUSTOM_FIELDS, JOURNAL_NAMESPACE
    from invenio_rdm_records.contrib.meeting import MEETING_CUSTOM_FIELDS, MEETING_NAMESPACE

    app_config["RDM_NAMESPACES"] = {
        **rdm.RDM_NAMESPACES,
        **JOURNAL_NAMESPACE,
        **IMPRINT_NAMESPACE,
        **MEETING_NAMESPACE,
    }
    app_config["RDM_CUSTOM_FIELDS"] = [
        *JOURNAL_CUSTOM_FIELDS,
        *IMPRINT_CUSTOM_FIELDS,
        *MEETING_CUSTOM_FIELDS,
    ]
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: OpenAIRERDMTransformer,
    }
    return app_config


@pytest.fixture(scope="module")
def openaire_vocabularies(rdm_vocabularies):
    """The resource types of literature, an affiliation, the funders (one with its Crossref
    Funder ID) and an award of the European Commission."""
    from invenio_pidstore.errors import PIDAlreadyExists
    from invenio_records_resources.proxies import current_service_registry
    from invenio_search import current_search
    from oaiharvest_test_support.rdm import fixture_entries, load_vocabularies

    load_vocabularies(EXTRA_VOCABULARIES)
    dfg = {
        "id": DFG,
        "name": "Deutsche Forschungsgemeinschaft",
        "identifiers": [
            {"scheme": "ror", "identifier": DFG},
            {"scheme": "doi", "identifier": "10.13039/501100001659"},
        ],
    }
    entries = {
        "affiliations": fixture_entries("affiliations", ["01ggx4157"], "affiliations_ror.yaml"),
        "funders": [*fixture_entries("funders", ["00k4n6c32"], "funders.yaml"), dfg],
        "awards": [
            {
                "id": AWARD_ID,
                "number": "755021",
                "title": {"en": "Personalised Treatment For Cystic Fibrosis Patients"},
                "funder": {"id": "00k4n6c32"},
            }
        ],
    }
    for service_id, found in entries.items():
        service = current_service_registry.get(service_id)
        for entry in found:
            try:
                service.create(system_identity, {k: v for k, v in entry.items() if k != "type"})
            except PIDAlreadyExists:
                continue
        current_search.flush_and_refresh(service.record_cls.index._name)


@pytest.fixture()
def rdm_openaire(rdm, openaire_vocabularies):
    return rdm


@pytest.fixture()
def custom_fields(app, rdm_openaire):
    """`invenio rdm-records custom-fields init`, as a site runs it after adding the fields."""
    from invenio_rdm_records.cli import custom_fields as custom_fields_command

    result = app.test_cli_runner().invoke(custom_fields_command, ["init"])
    assert result.exit_code == 0, result.output


@pytest.fixture()
def transformer(rdm_openaire, custom_fields) -> OpenAIRERDMTransformer:
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    return current_oai_harvester.transformers.get(TRANSFORMER)


DOCUMENTS = openaire_documents()


def test_smoke(rdm_openaire, transformer):
    for name, document in DOCUMENTS.items():
        data = transformer.transform(harvested(document))
        print(name, transformer.last_warnings)
        print(data)
        publish(rdm_openaire, data)
