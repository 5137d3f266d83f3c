"""Real OpenAIRE Guidelines v4 records through ``oai_openaire_rdm`` into InvenioRDM.

The OpenAIRE guidelines' own samples (a EuropePMC journal article in two revisions, a DiVA
report reduced to the mandatory elements, and the schema's generated mock record with nonsense
values in every element) and 4 records served by real repositories (ZORA on EPrints, PUB
Bielefeld on LibreCat, AIR Milan on IRIS), kept in OpenAIRE's aggregation tests: each is valid
RDM data by RDM's service schema and its record's JSON Schema, and all are harvested over
OAI-PMH from the bundled provider and published. Where they come from and under which licence:
``data/real/openaire/SOURCES.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from lxml import etree

from oarepo_oaipmh_harvester.testing.corpus_openaire import OPENAIRE_PREFIX
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider
from oarepo_oaipmh_harvester.testing.recorded import corpus_of
from oarepo_oaipmh_harvester.transformers.rdm.openaire import OpenAIRERDMTransformer

from .conftest import RDM_TARGET
from .helpers import tracking
from .test_datacite_to_rdm import harvested
from .test_openaire_to_rdm import (  # noqa: F401 (fixtures)
    app_config,
    custom_fields,
    openaire_vocabularies,
    rdm_openaire,
)

DATA = Path(__file__).parent / "data" / "real" / "openaire"


def documents() -> dict[str, str]:
    """OAI identifier -> the ``oaire:resource`` as the source wrote it (comments kept; the
    XML declaration cannot stand inside ``<metadata>``)."""
    return {
        f"oai:real.openaire:{path.stem}": etree.tostring(
            etree.parse(str(path)).getroot(), encoding="unicode"
        )
        for path in sorted(DATA.glob("*.xml"))
    }


def test_every_real_openaire_record_is_rdm_data(rdm_openaire, custom_fields):  # noqa: F811
    from invenio_rdm_records.records.api import RDMDraft

    transformer = OpenAIRERDMTransformer()
    found = documents()
    warnings = {}
    for identifier, document in found.items():
        data = transformer.transform(harvested(document, identifier=identifier))
        warnings[identifier] = transformer.last_warnings
        loaded, errors = rdm_openaire.schema.load(data, context={"identity": system_identity})
        assert errors == [], (identifier, errors)
        RDMDraft({"$schema": RDMDraft.schema.value, **loaded}).validate()
    assert len(found) == 8
    article = warnings["oai:real.openaire:guidelines-journalarticle1"]
    # No Issued date (the sample has Accepted and Available only), EuropePMC's PMC id typed
    # PMID, the licence's start date and the EU funding stream are what the article gives up.
    assert article == [
        "Publication date: no Issued date or publicationYear; using 2024, the year of the "
        "record's datestamp 2024-01-01T00:00:00Z.",
        "licenseCondition 'Creative Commons Attribution‐NonCommercial': startDate "
        "'2018-10-23' has no RDM field; dropped.",
        "identifier 'PMC5574022' (PMID): scheme unknown; dropped.",
        "fundingReference 'European Commission': fundingStream 'H2020 Marie Skłodowska-Curie "
        "Actions' has no RDM field; dropped.",
    ]
    assert len(warnings["oai:real.openaire:guidelines-mocksample"]) == 28
    assert warnings["oai:real.openaire:guidelines-minimal"] == []
    # Real exporters' misplaced DataCite wrappers are read as meant, with a warning each.
    assert warnings["oai:real.openaire:bielefeld-pub-1997560"][:2] == [
        "datacite:title outside datacite:titles (1): read as if in datacite:titles.",
        "datacite:date outside datacite:dates (1): read as if in datacite:dates.",
    ]
    assert warnings["oai:real.openaire:iris-unimi-907506"] == [
        "datacite:creator wrapping datacite:creator elements: read as datacite:creators."
    ]


def test_real_openaire_records_publish_through_oai_pmh(rdm_openaire, custom_fields):  # noqa: F811
    found = documents()
    corpus = corpus_of(found, OPENAIRE_PREFIX)
    with OAIPMHProvider(corpus, metadata_prefixes=(OPENAIRE_PREFIX,)) as provider:
        make_harvester(
            provider.base_url,
            target=RDM_TARGET,
            transformer="oai_openaire_rdm",
            metadata_prefix=OPENAIRE_PREFIX,
        )
        summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (len(found), 0)
    rows = tracking()
    published = {
        identifier: rdm_openaire.read(system_identity, row.local_pid).to_dict()
        for identifier, row in rows.items()
    }
    article = published["oai:real.openaire:guidelines-journalarticle1"]
    metadata = article["metadata"]
    assert metadata["title"].startswith("Redox‐Neutral Dual Functionalization")
    assert metadata["creators"][3]["person_or_org"]["identifiers"] == [
        {"scheme": "orcid", "identifier": "0000-0003-1983-9378"}
    ]
    assert metadata["resource_type"]["id"] == "publication-article"
    assert metadata["rights"][0]["id"] == "cc-by-nc-4.0"
    assert article["access"]["files"] == "public"
    assert metadata["funding"] == [
        {
            "funder": {"name": "European Commission"},
            "award": {
                "number": "660668",
                "title": {"en": "ACT against AMR"},
                "identifiers": [
                    {
                        "scheme": "url",
                        "identifier": "http://cordis.europa.eu/project/rcn/195983_en.html",
                    }
                ],
            },
        }
    ]
    assert article["custom_fields"]["journal:journal"] == {
        "title": "Chemistry",
        "volume": "23",
        "issue": "31",
        "pages": "7444-7447",
        "issn": "0947-6539",
    }
    assert metadata["version"] == "SMUR"
    minimal = published["oai:real.openaire:guidelines-minimal"]
    assert minimal["metadata"]["resource_type"]["id"] == "publication-report"
    assert minimal["metadata"]["publication_date"] == "2011"
    mock = published["oai:real.openaire:guidelines-mocksample"]
    assert mock["access"]["files"] == "restricted"  # c_16ec
    assert rows["oai:real.openaire:guidelines-mocksample"].warnings
    # The real repositories' records, with their exporters' misplaced wrappers read as meant.
    thesis = published["oai:real.openaire:bielefeld-pub-2527408"]["metadata"]
    assert thesis["publication_date"] == "2012"
    # PUB types its dissertations with COAR c_1843 ("other") and the term "bi_dissertation".
    assert thesis["resource_type"]["id"] == "other"
    pub = published["oai:real.openaire:bielefeld-pub-1997560"]["metadata"]
    assert pub["title"].startswith("Die antiken Grundlagen der europäischen Expansion")
    assert pub["publication_date"] == "2002"
    iris = published["oai:real.openaire:iris-unimi-907506"]["metadata"]
    assert len(iris["creators"]) == 45
    # No nameType and no "Family, Given" form: "W.J. Sutherland" is read as an organisation
    # (the Dublin Core rule for bare names), a known loss.
    assert iris["creators"][0]["person_or_org"] == {
        "type": "organizational",
        "name": "W.J. Sutherland",
    }
    zora = published["oai:real.openaire:zora-10"]
    assert zora["metadata"]["creators"][1]["person_or_org"]["identifiers"] == [
        {"scheme": "orcid", "identifier": "0000-0003-1002-4762"}
    ]
    assert zora["metadata"]["publication_date"] == "2006"
