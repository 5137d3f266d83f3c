"""The ``oai_datacite_rdm`` transformer against the real RDM records service and vocabularies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from lxml import etree

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.protocol.items import record_from_xml
from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.testing.corpus import Corpus, CorpusRecord
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider, ServedFormat
from oarepo_oaipmh_harvester.transformers import TransformerChain, TransformError
from oarepo_oaipmh_harvester.transformers.rdm.datacite import (
    DataCiteRDMTransformer,
    datacite_resource,
)
from oarepo_oaipmh_harvester.transformers.rdm.helpers import kebab, scheme_for_type
from oarepo_oaipmh_harvester.transformers.rdm.xml import text_of

from .comparison import comparable_fields
from .conftest import RDM_TARGET
from .test_dc_to_rdm import publish

TRANSFORMER = "oai_datacite_rdm"
MISSING_DATE = "OAI_HARVESTER_RDM_MISSING_DATE"
SPRING = "sometime last spring"
SITE_CHAIN = "datacite-site"
OAI_NS = "http://www.openarchives.org/OAI/2.0/"
OAI_DATACITE_NS = "http://schema.datacite.org/oai/oai-1.1/"
KERNEL_4 = "http://datacite.org/schema/kernel-4"
AWARD_ID = "00k4n6c32::755021"
MESH_CALCIMYCIN = "https://id.nlm.nih.gov/mesh/D000001"


class SiteKeyword:
    """A site's own step after ``oai_datacite_rdm``: its keyword on every record, and a
    warning for records without an abstract."""

    def __init__(self, keyword: str) -> None:
        self.keyword = keyword
        self.last_warnings: list[str] = []

    def adjust(self, record: OAIRecord, data: dict[str, Any]) -> dict[str, Any]:
        metadata = data["metadata"]
        self.last_warnings = [] if "description" in metadata else ["site: no abstract"]
        metadata.setdefault("subjects", []).append({"subject": self.keyword})
        return data


def oai_datacite(resource: str, symbol: str = "CERN.ZENODO") -> str:
    """`resource` in the envelope of invenio-oaiserver's ``oai_datacite`` format."""
    return (
        f'<oai_datacite xmlns="{OAI_DATACITE_NS}"><schemaVersion>4.5</schemaVersion>'
        f"<datacentreSymbol>{symbol}</datacentreSymbol><payload>{resource}</payload></oai_datacite>"
    )


def resource(body: str, namespace: str = KERNEL_4) -> str:
    return f'<resource xmlns="{namespace}" xmlns:xml="http://www.w3.org/XML/1998/namespace">{body}</resource>'


def harvested(
    metadata: str, identifier: str = "oai:example.org:1", datestamp: str = "2024-01-01T00:00:00Z"
) -> OAIRecord:
    """The record as the harvester reads it off the wire: an OAI-PMH ``<record>``."""
    return record_from_xml(
        f'<record xmlns="{OAI_NS}"><header><identifier>{identifier}</identifier>'
        f"<datestamp>{datestamp}</datestamp></header>"
        f"<metadata>{metadata}</metadata></record>"
    )


RICH = resource(
    """
  <identifier identifierType="DOI">10.1234/LATTICE.2021</identifier>
  <creators>
    <creator>
      <creatorName nameType="Personal" xml:lang="cs">Novák, Jan</creatorName>
      <givenName>Jan</givenName>
      <familyName>Novák</familyName>
      <nameIdentifier nameIdentifierScheme="ORCID" schemeURI="https://orcid.org/">https://orcid.org/0000-0002-1825-0097</nameIdentifier>
      <affiliation affiliationIdentifier="https://ror.org/01ggx4157" affiliationIdentifierScheme="ROR" schemeURI="https://ror.org">CERN</affiliation>
      <affiliation>Charles University</affiliation>
    </creator>
    <creator>
      <creatorName nameType="Organizational">European Organization for Nuclear Research</creatorName>
      <nameIdentifier nameIdentifierScheme="ROR">https://ror.org/01ggx4157</nameIdentifier>
    </creator>
  </creators>
  <titles>
    <title xml:lang="en">Spectral lattice models</title>
    <title titleType="Subtitle" xml:lang="en">Photographs of the set-up</title>
    <title titleType="TranslatedTitle" xml:lang="de">Spektrale Gittermodelle</title>
    <title titleType="AlternativeTitle">Lattice spectra</title>
  </titles>
  <publisher publisherIdentifier="https://ror.org/01ggx4157" publisherIdentifierScheme="ROR">CERN</publisher>
  <publicationYear>2021</publicationYear>
  <resourceType resourceTypeGeneral="Image">Photo</resourceType>
  <subjects>
    <subject xml:lang="en">lattice</subject>
    <subject subjectScheme="MeSH" schemeURI="https://id.nlm.nih.gov/mesh/" valueURI="https://id.nlm.nih.gov/mesh/D000001">Calcimycin</subject>
    <subject subjectScheme="DDC" classificationCode="530">Physics</subject>
  </subjects>
  <contributors>
    <contributor contributorType="ContactPerson">
      <contributorName nameType="Personal">Svoboda, Petr</contributorName>
      <givenName>Petr</givenName>
      <familyName>Svoboda</familyName>
    </contributor>
    <contributor contributorType="HostingInstitution">
      <contributorName nameType="Organizational">CESNET</contributorName>
    </contributor>
  </contributors>
  <dates>
    <date dateType="Issued">2021-03-04</date>
    <date dateType="Created" dateInformation="first measurements">2020-01/2020-06</date>
    <date dateType="Collected">2019-05-01T10:00:00Z</date>
  </dates>
  <language>en</language>
  <alternateIdentifiers>
    <alternateIdentifier alternateIdentifierType="URL">https://repository.example.org/records/42</alternateIdentifier>
    <alternateIdentifier alternateIdentifierType="ISBN">978-3-16-148410-0</alternateIdentifier>
    <alternateIdentifier alternateIdentifierType="arXiv">arXiv:2101.00001</alternateIdentifier>
    <alternateIdentifier alternateIdentifierType="DOI">https://doi.org/10.1234/lattice.2021</alternateIdentifier>
  </alternateIdentifiers>
  <relatedIdentifiers>
    <relatedIdentifier relatedIdentifierType="DOI" relationType="IsSupplementTo" resourceTypeGeneral="JournalArticle">10.5555/journal.article.7</relatedIdentifier>
    <relatedIdentifier relatedIdentifierType="URL" relationType="IsDerivedFrom">https://data.example.org/raw/42</relatedIdentifier>
    <relatedIdentifier relatedIdentifierType="DOI" relationType="IsPartOf" resourceTypeGeneral="Dataset">https://doi.org/10.5555/COLLECTION</relatedIdentifier>
  </relatedIdentifiers>
  <sizes><size>12 MB</size><size>3 files</size></sizes>
  <formats><format>image/tiff</format></formats>
  <version>2.1</version>
  <rightsList>
    <rights xml:lang="en" rightsURI="https://creativecommons.org/licenses/by/4.0/legalcode" rightsIdentifier="CC-BY-4.0" rightsIdentifierScheme="SPDX" schemeURI="https://spdx.org/licenses/">Creative Commons Attribution 4.0 International</rights>
    <rights rightsURI="info:eu-repo/semantics/openAccess">Open Access</rights>
    <rights rightsURI="https://example.org/terms">Site terms of use</rights>
  </rightsList>
  <descriptions>
    <description descriptionType="Abstract" xml:lang="en">We study spectral lattice models &amp; their photographs.<br/>Second line.</description>
    <description descriptionType="Methods" xml:lang="en">Photographed with a lattice camera.</description>
    <description descriptionType="SeriesInformation">Lattice series, vol. 3</description>
    <description descriptionType="TechnicalInfo" xml:lang="de">TIFF, 16 bit.</description>
  </descriptions>
  <geoLocations>
    <geoLocation>
      <geoLocationPlace>Geneva</geoLocationPlace>
      <geoLocationPoint><pointLongitude>6.05</pointLongitude><pointLatitude>46.23</pointLatitude></geoLocationPoint>
    </geoLocation>
  </geoLocations>
  <fundingReferences>
    <fundingReference>
      <funderName>European Commission</funderName>
      <funderIdentifier funderIdentifierType="ROR">https://ror.org/00k4n6c32</funderIdentifier>
      <awardNumber awardURI="https://cordis.europa.eu/project/id/755021">755021</awardNumber>
      <awardTitle>Personalised Treatment For Cystic Fibrosis Patients</awardTitle>
    </fundingReference>
    <fundingReference>
      <funderName>Czech Science Foundation</funderName>
      <awardNumber awardURI="https://doi.org/10.5555/gacr.21-00001S">21-00001S</awardNumber>
      <awardTitle>Lattice spectra</awardTitle>
    </fundingReference>
  </fundingReferences>
"""
)

BARE = resource(
    """
  <identifier identifierType="DOI">10.5281/zenodo.123</identifier>
  <creators>
    <creator>
      <creatorName>Dvořáková, Eliška</creatorName>
      <nameIdentifier nameIdentifierScheme="ORCID">0000-0001-5109-3700</nameIdentifier>
    </creator>
    <creator>
      <creatorName>European Organization for Nuclear Research</creatorName>
      <nameIdentifier nameIdentifierScheme="ROR" schemeURI="https://ror.org">01ggx4157</nameIdentifier>
    </creator>
    <creator><creatorName>Smith, John</creatorName></creator>
    <creator><creatorName>Lattice Group</creatorName></creator>
    <creator><creatorName nameType="Personal">Jan Novák</creatorName><givenName>Jan</givenName></creator>
  </creators>
  <titles><title>Measured lattice spectra, 2019</title></titles>
  <publisher>Zenodo</publisher>
  <publicationYear>2019</publicationYear>
  <resourceType resourceTypeGeneral="Text">Journal article</resourceType>
  <dates><date dateType="Available">2019-06-01</date></dates>
  <language>de</language>
  <alternateIdentifiers>
    <alternateIdentifier alternateIdentifierType="DOI">10.5281/zenodo.122</alternateIdentifier>
  </alternateIdentifiers>
  <relatedIdentifiers>
    <relatedIdentifier relatedIdentifierType="URL" relationType="IsVersionOf">https://github.com/example/lattice/tree/v1.0</relatedIdentifier>
  </relatedIdentifiers>
  <rightsList>
    <rights rightsURI="https://creativecommons.org/publicdomain/zero/1.0/legalcode">CC0 1.0</rights>
  </rightsList>
  <descriptions><description descriptionType="Other">The article as submitted.</description></descriptions>
  <geoLocations>
    <geoLocation>
      <geoLocationBox>
        <westBoundLongitude>14.2</westBoundLongitude><eastBoundLongitude>14.7</eastBoundLongitude>
        <southBoundLatitude>49.9</southBoundLatitude><northBoundLatitude>50.2</northBoundLatitude>
      </geoLocationBox>
    </geoLocation>
    <geoLocation>
      <geoLocationPlace>Prague</geoLocationPlace>
      <geoLocationPolygon>
        <polygonPoint><pointLongitude>14.3</pointLongitude><pointLatitude>50.0</pointLatitude></polygonPoint>
        <polygonPoint><pointLongitude>14.6</pointLongitude><pointLatitude>50.0</pointLatitude></polygonPoint>
        <polygonPoint><pointLongitude>14.5</pointLongitude><pointLatitude>50.1</pointLatitude></polygonPoint>
      </geoLocationPolygon>
    </geoLocation>
  </geoLocations>
  <fundingReferences>
    <fundingReference>
      <funderName>Agence Nationale de la Recherche</funderName>
      <funderIdentifier funderIdentifierType="ROR">https://ror.org/00rbzpz17</funderIdentifier>
    </fundingReference>
  </fundingReferences>
"""
)


# -- helpers, no application -----------------------------------------------------------------
def test_reading_helpers():
    assert kebab("SeriesInformation") == "series-information"
    assert kebab("Other") == "other"
    schemes = {"ads": {"datacite": "bibcode"}, "url": {"datacite": "URL"}, "other": {}}
    assert scheme_for_type("bibcode", schemes) == "ads"
    assert scheme_for_type("URL", schemes) == "url"
    assert scheme_for_type("Other", schemes) == "other"
    assert scheme_for_type("LISSN", schemes) is None
    element = etree.fromstring("<d>a &amp; <i>b</i><br/>c &lt;x&gt;</d>")
    assert text_of(element) == "a & bc <x>"
    assert text_of(element, as_html=True) == "a &amp; b<br>c &lt;x&gt;"

    envelope = etree.fromstring(oai_datacite(RICH))
    assert etree.QName(datacite_resource(envelope, "x")).namespace == KERNEL_4
    bare = etree.fromstring(BARE)
    assert datacite_resource(bare, "x") is bare
    with pytest.raises(TransformError, match="no DataCite resource"):
        datacite_resource(etree.fromstring("<oai_dc xmlns='http://example.org/'/>"), "x")
    with pytest.raises(TransformError, match="no DataCite resource"):
        datacite_resource(etree.fromstring(f"<oai_datacite xmlns='{OAI_DATACITE_NS}'/>"), "x")
    with pytest.raises(TransformError, match="has no metadata"):
        datacite_resource(None, "oai:x:1")


# -- against the RDM app ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def app_config(app_config):
    """External DOIs on (RDM drops the doi scheme unless DataCite or Crossref is enabled);
    the transformer registered by configuration too (a venv's entry points may be another
    worktree's), and a site's chain with options."""
    from oaiharvest_test_support.rdm import rdm_config

    pids = rdm_config(external_dois=True)["RDM_PERSISTENT_IDENTIFIERS"]
    app_config["RDM_PERSISTENT_IDENTIFIERS"] = pids
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: DataCiteRDMTransformer,
        SITE_CHAIN: {
            "chain": [
                {"transformer": TRANSFORMER, "options": {"default_resource_type": "dataset"}},
                {"transformer": SiteKeyword, "options": {"keyword": "harvested"}},
            ]
        },
    }
    return app_config


SUBJECT = {"id": MESH_CALCIMYCIN, "scheme": "MeSH", "subject": "Calcimycin"}
AWARD = {
    "id": AWARD_ID,
    "number": "755021",
    "title": {"en": "Personalised Treatment For Cystic Fibrosis Patients"},
    "funder": {"id": "00k4n6c32"},
}


@pytest.fixture(scope="module")
def contributed_vocabularies(rdm_vocabularies):
    """Entries of the vocabularies with services of their own: an affiliation and funders
    from rdm-records' fixture files, an award of one of them and a MeSH subject (rdm-records
    ships none; these are the ones its own tests use)."""
    from invenio_pidstore.errors import PIDAlreadyExists
    from invenio_records_resources.proxies import current_service_registry
    from invenio_search import current_search
    from oaiharvest_test_support.rdm import fixture_entries

    entries = {
        "affiliations": fixture_entries("affiliations", ["01ggx4157"], "affiliations_ror.yaml"),
        "funders": fixture_entries("funders", ["00k4n6c32", "00rbzpz17"], "funders.yaml"),
        "awards": [AWARD],
        "subjects": [SUBJECT],
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
def rdm_dc(rdm, contributed_vocabularies):
    return rdm


@pytest.fixture()
def transformer(rdm_dc) -> DataCiteRDMTransformer:
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    return current_oai_harvester.transformers.get(TRANSFORMER)


def names(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            entry["person_or_org"]["type"],
            entry["person_or_org"]["name"],
            entry["person_or_org"].get("given_name"),
            entry["person_or_org"].get("family_name"),
            [(i["scheme"], i["identifier"]) for i in entry["person_or_org"].get("identifiers", [])],
            [(a.get("id"), a["name"]) for a in entry.get("affiliations", [])],
        )
        for entry in entries
    ]


def test_rich_oai_datacite_record_is_published_with_every_value(rdm_dc, transformer):
    data = transformer.transform(harvested(oai_datacite(RICH)))
    assert transformer.last_warnings == []

    record = publish(rdm_dc, data)

    metadata = record["metadata"]
    assert metadata["title"] == "Spectral lattice models"
    assert [
        (t["title"], t["type"]["id"], t.get("lang", {}).get("id"))
        for t in metadata["additional_titles"]
    ] == [
        ("Photographs of the set-up", "subtitle", "eng"),
        ("Spektrale Gittermodelle", "translated-title", "deu"),
        ("Lattice spectra", "alternative-title", None),
    ]
    assert names(metadata["creators"]) == [
        (
            "personal",
            "Novák, Jan",
            "Jan",
            "Novák",
            [("orcid", "0000-0002-1825-0097")],
            [
                ("01ggx4157", "European Organization for Nuclear Research"),
                (None, "Charles University"),
            ],
        ),
        (
            "organizational",
            "European Organization for Nuclear Research",
            None,
            None,
            [("ror", "01ggx4157")],
            [],
        ),
    ]
    assert names(metadata["contributors"]) == [
        ("personal", "Svoboda, Petr", "Petr", "Svoboda", [], []),
        ("organizational", "CESNET", None, None, [], []),
    ]
    assert [c["role"]["id"] for c in metadata["contributors"]] == [
        "contactperson",
        "hostinginstitution",
    ]
    assert metadata["publication_date"] == "2021-03-04"
    assert [(d["date"], d["type"]["id"], d.get("description")) for d in metadata["dates"]] == [
        ("2020-01/2020-06", "created", "first measurements"),
        ("2019-05-01", "collected", None),
    ]
    assert metadata["resource_type"]["id"] == "image-photo"
    assert [lang["id"] for lang in metadata["languages"]] == ["eng"]
    assert [r.get("id") for r in metadata["rights"]] == ["cc-by-4.0", None]
    assert (metadata["rights"][1]["title"], metadata["rights"][1]["link"]) == (
        {"en": "Site terms of use"},
        "https://example.org/terms",
    )
    assert record["access"]["record"] == "public" and record["access"]["files"] == "public"
    assert record["files"]["enabled"] is False
    assert record["pids"]["doi"] == {"identifier": "10.1234/LATTICE.2021", "provider": "external"}
    assert metadata["identifiers"] == [
        {"identifier": "https://repository.example.org/records/42", "scheme": "url"},
        {"identifier": "978-3-16-148410-0", "scheme": "isbn"},
        {"identifier": "arXiv:2101.00001", "scheme": "arxiv"},
    ]
    assert [
        (
            r["identifier"],
            r["scheme"],
            r["relation_type"]["id"],
            r.get("resource_type", {}).get("id"),
        )
        for r in metadata["related_identifiers"]
    ] == [
        ("10.5555/journal.article.7", "doi", "issupplementto", "publication-article"),
        ("https://data.example.org/raw/42", "url", "isderivedfrom", None),
        ("10.5555/COLLECTION", "doi", "ispartof", "dataset"),
    ]
    assert [s.get("id") or s["subject"] for s in metadata["subjects"]] == [
        "lattice",
        MESH_CALCIMYCIN,
        "Physics",
    ]
    assert metadata["subjects"][1]["subject"] == "Calcimycin"  # from the vocabulary
    assert metadata["description"] == (
        "We study spectral lattice models &amp; their photographs.<br>Second line."
    )
    assert [
        (d["description"], d["type"]["id"], d.get("lang", {}).get("id"))
        for d in metadata["additional_descriptions"]
    ] == [
        ("Photographed with a lattice camera.", "methods", "eng"),
        ("Lattice series, vol. 3", "series-information", None),
        ("TIFF, 16 bit.", "technical-info", "deu"),
    ]
    assert metadata["publisher"] == "CERN"
    assert metadata["version"] == "2.1"
    assert metadata["sizes"] == ["12 MB", "3 files"] and metadata["formats"] == ["image/tiff"]
    assert metadata["locations"]["features"] == [
        {"place": "Geneva", "geometry": {"type": "Point", "coordinates": [6.05, 46.23]}}
    ]
    funding = metadata["funding"]
    assert (funding[0]["funder"]["id"], funding[0]["award"]["id"]) == ("00k4n6c32", AWARD_ID)
    assert funding[1]["funder"] == {"name": "Czech Science Foundation"}
    assert funding[1]["award"] == {
        "number": "21-00001S",
        "title": {"en": "Lattice spectra"},
        "identifiers": [{"scheme": "doi", "identifier": "10.5555/gacr.21-00001S"}],
    }


def test_bare_datacite_record_is_published(rdm_dc, transformer):
    data = transformer.transform(harvested(BARE, identifier="oai:zenodo.org:123"))
    assert transformer.last_warnings == []

    record = publish(rdm_dc, data)

    metadata = record["metadata"]
    # No nameType: the ORCID and the comma make persons, the ROR an organisation, and a
    # bare name without a comma stays an organisation (as for Dublin Core).
    assert [(n[0], n[1], n[4]) for n in names(metadata["creators"])] == [
        ("personal", "Dvořáková, Eliška", [("orcid", "0000-0001-5109-3700")]),
        ("organizational", "European Organization for Nuclear Research", [("ror", "01ggx4157")]),
        ("personal", "Smith, John", []),
        ("organizational", "Lattice Group", []),
        ("personal", "Novák, Jan", []),  # the given name told the family name apart
    ]
    assert metadata["publication_date"] == "2019"  # no Issued date: the publicationYear
    assert [(d["date"], d["type"]["id"]) for d in metadata["dates"]] == [
        ("2019-06-01", "available")
    ]
    assert metadata["resource_type"]["id"] == "publication-article"  # Text / Journal article
    assert [lang["id"] for lang in metadata["languages"]] == ["deu"]
    assert metadata["rights"][0]["id"] == "cc0-1.0"
    assert record["pids"]["doi"]["identifier"] == "10.5281/zenodo.123"
    assert metadata["identifiers"] == [{"identifier": "10.5281/zenodo.122", "scheme": "doi"}]
    assert metadata["related_identifiers"][0]["relation_type"]["id"] == "isversionof"
    assert "description" not in metadata  # no Abstract: the Other description is additional
    assert metadata["additional_descriptions"][0]["type"]["id"] == "other"
    assert metadata["publisher"] == "Zenodo"
    assert metadata["funding"] == [
        {"funder": {"id": "00rbzpz17", "name": "Agence Nationale de la Recherche"}}
    ]
    box, polygon = metadata["locations"]["features"]
    assert box == {
        "geometry": {
            "type": "Polygon",
            "coordinates": [[[14.2, 49.9], [14.7, 49.9], [14.7, 50.2], [14.2, 50.2], [14.2, 49.9]]],
        }
    }
    assert polygon["place"] == "Prague"
    assert polygon["geometry"]["coordinates"][0][-1] == [14.3, 50.0]  # the ring is closed


def test_kernel_3_forms(rdm_dc, transformer):
    kernel_3 = resource(
        """
      <identifier identifierType="DOI">10.5555/k3</identifier>
      <creators><creator><creatorName>Horák, Karel</creatorName></creator></creators>
      <titles><title>Old kernel record</title></titles>
      <publisher>Archive</publisher>
      <publicationYear>2012</publicationYear>
      <resourceType resourceTypeGeneral="Dataset"/>
      <contributors>
        <contributor contributorType="Funder"><contributorName>European Commission</contributorName></contributor>
      </contributors>
      <geoLocations><geoLocation>
        <geoLocationPoint>50.1 14.4</geoLocationPoint>
        <geoLocationBox>49.9 14.2 50.2 14.7</geoLocationBox>
      </geoLocation></geoLocations>
        """,
        namespace="http://datacite.org/schema/kernel-3",
    )
    data = transformer.transform(harvested(kernel_3))
    assert transformer.last_warnings == []

    metadata = publish(rdm_dc, data)["metadata"]

    assert metadata["creators"][0]["person_or_org"]["family_name"] == "Horák"
    assert metadata["resource_type"]["id"] == "dataset"
    assert metadata["funding"] == [{"funder": {"name": "European Commission"}}]
    point, box = metadata["locations"]["features"]
    assert point["geometry"] == {"type": "Point", "coordinates": [14.4, 50.1]}
    assert box["geometry"]["coordinates"][0][0] == [14.2, 49.9]


def test_an_rdm_record_served_as_oai_datacite_comes_back_the_same(rdm_dc, transformer):
    """RDM's own DataCite serializer, as invenio-oaiserver serves ``oai_datacite``, and
    back: the round trip that another instance's harvest of this one makes."""
    from invenio_rdm_records.oai import oai_datacite_etree
    from invenio_rdm_records.records.api import RDMRecord

    original = publish(
        rdm_dc,
        {
            "access": {"record": "public", "files": "public"},
            "files": {"enabled": False},
            "pids": {"doi": {"identifier": "10.1234/round.trip", "provider": "external"}},
            "metadata": {
                "resource_type": {"id": "publication-article"},
                "title": "Round trip of a record",
                "additional_titles": [
                    {"title": "A subtitle", "type": {"id": "subtitle"}, "lang": {"id": "eng"}},
                    {
                        "title": "Zpáteční cesta",
                        "type": {"id": "translated-title"},
                        "lang": {"id": "ces"},
                    },
                ],
                "creators": [
                    {
                        "person_or_org": {
                            "type": "personal",
                            "family_name": "Novák",
                            "given_name": "Jan",
                            "identifiers": [
                                {"scheme": "orcid", "identifier": "0000-0002-1825-0097"}
                            ],
                        },
                        "affiliations": [{"id": "01ggx4157"}, {"name": "Charles University"}],
                    },
                    {
                        "person_or_org": {
                            "type": "organizational",
                            "name": "CERN",
                            "identifiers": [{"scheme": "ror", "identifier": "01ggx4157"}],
                        }
                    },
                ],
                "contributors": [
                    {
                        "person_or_org": {
                            "type": "personal",
                            "family_name": "Svoboda",
                            "given_name": "Petr",
                        },
                        "role": {"id": "contactperson"},
                    },
                    {
                        "person_or_org": {"type": "organizational", "name": "CESNET"},
                        "role": {"id": "hostinginstitution"},
                    },
                ],
                "publication_date": "2021-03-04",
                "dates": [
                    {
                        "date": "2020-01/2020-06",
                        "type": {"id": "created"},
                        "description": "measured",
                    },
                    {"date": "2021-05-01", "type": {"id": "updated"}},
                ],
                "languages": [{"id": "eng"}],
                "rights": [
                    {"id": "cc-by-4.0"},
                    {"title": {"en": "Site terms of use"}, "link": "https://example.org/terms"},
                ],
                "copyright": "© 2021 the authors",
                "identifiers": [
                    {"identifier": "978-3-16-148410-0", "scheme": "isbn"},
                    {"identifier": "https://repository.example.org/records/42", "scheme": "url"},
                ],
                "related_identifiers": [
                    {
                        "identifier": "10.5555/journal.issue.7",
                        "scheme": "doi",
                        "relation_type": {"id": "ispartof"},
                        "resource_type": {"id": "publication-journal"},
                    },
                    {
                        "identifier": "https://data.example.org/raw/42",
                        "scheme": "url",
                        "relation_type": {"id": "isderivedfrom"},
                    },
                ],
                "subjects": [{"subject": "lattice"}, {"id": MESH_CALCIMYCIN}],
                "description": "<p>We study <b>spectral</b> lattice models.</p>",
                "additional_descriptions": [
                    {
                        "description": "Measured with a lattice.",
                        "type": {"id": "methods"},
                        "lang": {"id": "eng"},
                    },
                ],
                "publisher": "CERN",
                "version": "v2",
                "sizes": ["12 MB"],
                "formats": ["text/csv"],
                "funding": [
                    {"funder": {"id": "00k4n6c32"}, "award": {"id": AWARD_ID}},
                    {
                        "funder": {"name": "Czech Science Foundation"},
                        "award": {"number": "21-00001S", "title": {"en": "Lattice spectra"}},
                    },
                ],
                "locations": {
                    "features": [
                        {
                            "place": "Geneva",
                            "geometry": {"type": "Point", "coordinates": [6.05, 46.23]},
                        }
                    ]
                },
            },
        },
    )
    source = RDMRecord.pid.resolve(original["id"])
    served = etree.tostring(
        oai_datacite_etree(None, {"_source": source.dumps()}), encoding="unicode"
    )
    oai_identifier = original["pids"]["oai"]["identifier"]

    data = transformer.transform(harvested(served, identifier=oai_identifier))

    assert transformer.last_warnings == []
    assert data["pids"]["doi"] == original["pids"]["doi"]
    # One instance cannot publish a DOI twice: the copy goes in without it.
    del data["pids"]
    copy = publish(rdm_dc, data)

    assert comparable_fields(copy) == {**comparable_fields(original), "doi": None}


def test_unmappable_values_are_warnings_on_a_valid_record(rdm_dc, transformer):
    data = transformer.transform(
        harvested(
            resource(
                """
      <creators>
        <creator>
          <creatorName nameType="Personal">Anonymous</creatorName>
          <nameIdentifier nameIdentifierScheme="Scopus Author ID">7004212771</nameIdentifier>
          <nameIdentifier nameIdentifierScheme="ORCID">not-an-orcid</nameIdentifier>
          <affiliation affiliationIdentifier="https://ror.org/05a28rw58" affiliationIdentifierScheme="ROR">ETH Zurich</affiliation>
        </creator>
      </creators>
      <titles><title>Flyer of the 1968 spring</title><title titleType="Caption">A caption</title></titles>
      <publicationYear>1968</publicationYear>
      <resourceType resourceTypeGeneral="Flugblatt">Flyer</resourceType>
      <contributors>
        <contributor contributorType="Janitor"><contributorName>Doe, Jane</contributorName></contributor>
      </contributors>
      <dates><date dateType="Issued">ca. 1968</date><date dateType="Valid">1968-05</date></dates>
      <language>xx</language>
      <alternateIdentifiers><alternateIdentifier alternateIdentifierType="local">flyer-0042</alternateIdentifier></alternateIdentifiers>
      <relatedIdentifiers>
        <relatedIdentifier relatedIdentifierType="DOI" relationType="IsRelatedTo" resourceTypeGeneral="Flugblatt">10.5555/other</relatedIdentifier>
      </relatedIdentifiers>
      <rightsList>
        <rights rightsIdentifier="Custom-1.0">Own licence</rights>
        <rights rightsURI="info:eu-repo/semantics/closedAccess"/>
      </rightsList>
      <descriptions>
        <description descriptionType="Abstract">OK</description>
        <description descriptionType="Summary">A flyer.</description>
      </descriptions>
      <fundingReferences>
        <fundingReference>
          <funderName>Deutsche Forschungsgemeinschaft</funderName>
          <funderIdentifier funderIdentifierType="Crossref Funder ID">https://doi.org/10.13039/501100001659</funderIdentifier>
        </fundingReference>
      </fundingReferences>
      <geoLocations><geoLocation><geoLocationPoint><pointLongitude>200</pointLongitude><pointLatitude>50</pointLatitude></geoLocationPoint></geoLocation></geoLocations>
      <relatedItems><relatedItem relatedItemType="Book" relationType="IsPublishedIn"/></relatedItems>
                """
            )
        )
    )
    assert transformer.last_warnings == [
        "title 'A caption': no title type Caption; dropped.",
        "creator 'Anonymous': nameIdentifier '7004212771' (Scopus Author ID) is not one RDM takes; dropped.",
        "creator 'Anonymous': nameIdentifier 'not-an-orcid' (ORCID) is not one RDM takes; dropped.",
        "creator 'Anonymous': affiliation identifier 'https://ror.org/05a28rw58' is not in the "
        "affiliations vocabulary; kept the name.",
        "contributor 'Doe, Jane': no contributor role Janitor; using 'other'.",
        "date 'ca. 1968' (Issued): not an EDTF level 0 date; dropped.",
        "date '1968-05': no date type Valid; kept as 'other'.",
        "resourceType Flugblatt 'Flyer': no matching resource type; using the default 'publication'.",
        "language 'xx': not in the languages vocabulary; dropped.",
        "rights 'Custom-1.0': not in the licenses vocabulary; kept as text.",
        "identifier 'flyer-0042' (local): scheme unknown; dropped.",
        "relatedIdentifier '10.5555/other': no relation type IsRelatedTo; kept as 'other'.",
        "relatedIdentifier '10.5555/other': no resource type Flugblatt; kept without it.",
        "description 'OK': shorter than 3 characters; dropped.",
        "description 'A flyer.': no description type Summary; dropped.",
        "fundingReference 'Deutsche Forschungsgemeinschaft': funder identifier "
        "'https://doi.org/10.13039/501100001659' is not in the funders vocabulary; kept the name.",
        "geoLocationPoint '200 50': not valid coordinates; dropped.",
        "<relatedItems>: no RDM field is mapped; dropped.",
    ]

    record = publish(rdm_dc, data)

    metadata = record["metadata"]
    assert metadata["publication_date"] == "1968"
    assert metadata["resource_type"]["id"] == "publication"
    assert metadata["contributors"][0]["role"]["id"] == "other"
    assert metadata["creators"][0]["affiliations"] == [{"name": "ETH Zurich"}]
    assert "identifiers" not in metadata["creators"][0]["person_or_org"]
    assert metadata["rights"] == [{"title": {"en": "Own licence"}}]
    assert record["access"]["files"] == "restricted" and record["access"]["record"] == "public"
    assert metadata["related_identifiers"][0]["relation_type"]["id"] == "other"
    assert metadata["funding"] == [{"funder": {"name": "Deutsche Forschungsgemeinschaft"}}]
    assert "description" not in metadata and "locations" not in metadata


def test_options_of_a_named_transformer_and_without_external_dois(rdm_dc, app, monkeypatch):
    """A different default resource type by option; RDM's default config (no doi scheme
    unless DataCite or Crossref is enabled) puts the DOI into identifiers."""
    from invenio_rdm_records import config as rdm_config

    from oarepo_oaipmh_harvester.transformers import TransformerRegistry

    monkeypatch.setitem(
        app.config, "RDM_PERSISTENT_IDENTIFIERS", rdm_config.RDM_PERSISTENT_IDENTIFIERS
    )
    registry = TransformerRegistry(
        {
            "datasets": {
                "transformer": DataCiteRDMTransformer,
                "options": {"default_resource_type": "dataset"},
            }
        }
    )
    transformer = registry.get("datasets")
    untyped = RICH.replace('<resourceType resourceTypeGeneral="Image">Photo</resourceType>', "")
    data = transformer.transform(harvested(oai_datacite(untyped)))

    assert "pids" not in data
    assert transformer.last_warnings == [
        "resourceType missing: no matching resource type; using the default 'dataset'."
    ]
    record = publish(rdm_dc, data)
    assert record["metadata"]["resource_type"]["id"] == "dataset"
    assert "doi" not in record["pids"]
    assert {"identifier": "10.1234/LATTICE.2021", "scheme": "doi"} in record["metadata"][
        "identifiers"
    ]


def test_an_embargo_ends_on_the_available_date(rdm_dc, transformer):
    embargoed = BARE.replace(
        '<dates><date dateType="Available">2019-06-01</date></dates>',
        '<dates><date dateType="Available">2999-01-01</date></dates>',
    ).replace(
        '<rights rightsURI="https://creativecommons.org/publicdomain/zero/1.0/legalcode">CC0 1.0</rights>',
        '<rights rightsURI="info:eu-repo/semantics/embargoedAccess"/>',
    )
    data = transformer.transform(harvested(embargoed))
    assert transformer.last_warnings == []

    record = publish(rdm_dc, data)

    assert record["access"]["files"] == "restricted"
    assert record["access"]["embargo"] == {"active": True, "until": "2999-01-01", "reason": None}
    assert "rights" not in record["metadata"]

    past = embargoed.replace("2999-01-01", "2001-01-01")
    assert "embargo" not in transformer.transform(harvested(past))["access"]
    assert transformer.last_warnings == [
        "rights embargoedAccess without a future Available date: files restricted, no embargo set."
    ]


@pytest.mark.parametrize(
    ("element", "message"),
    [
        ("titles", "no title of at least 3 characters"),
        ("creators", "no DataCite creator with a name"),
    ],
)
def test_a_record_without_a_required_element_is_a_transform_error(
    rdm_dc, transformer, element, message
):
    tree = etree.fromstring(RICH)
    for found in tree.findall(f"{{{KERNEL_4}}}{element}"):
        tree.remove(found)
    transformer.transform(harvested(BARE))  # a record with warnings before: reset
    with pytest.raises(TransformError, match=message):
        transformer.transform(harvested(etree.tostring(tree, encoding="unicode")))
    assert transformer.last_warnings == []


def test_without_creators_contributors_stand_in_when_the_harvester_says_so(rdm_dc):
    """DataCite requires creators: oai_datacite_rdm fails such a record unless told."""
    tree = etree.fromstring(RICH)
    for found in tree.findall(f"{{{KERNEL_4}}}creators"):
        tree.remove(found)
    creatorless = harvested(etree.tostring(tree, encoding="unicode"))
    with pytest.raises(TransformError, match="no DataCite creator with a name"):
        DataCiteRDMTransformer().transform(creatorless)
    transformer = DataCiteRDMTransformer(missing_creator="contributors")

    data = transformer.transform(creatorless)
    record = publish(rdm_dc, data)

    stood_in = [c["person_or_org"]["name"] for c in record["metadata"]["creators"]]
    assert stood_in == [c["person_or_org"]["name"] for c in record["metadata"]["contributors"]]
    assert any(w.startswith("Creators: no DataCite creator") for w in transformer.last_warnings)


PUBLICATION_YEAR = "<publicationYear>2019</publicationYear>"
AVAILABLE = '<dates><date dateType="Available">2019-06-01</date></dates>'


def test_an_unusable_publication_date_gives_way_to_the_year_of_the_datestamp(rdm_dc, transformer):
    """RDM needs a publication date; a publicationYear it cannot take does not lose the
    record, and neither does a record with no date at all."""
    spring = BARE.replace(PUBLICATION_YEAR, f"<publicationYear>{SPRING}</publicationYear>")
    data = transformer.transform(harvested(spring, datestamp="2017-03-21T09:00:00Z"))
    assert data["metadata"]["publication_date"] == "2017"
    assert (
        "Publication date: no EDTF level 0 date in Issued date or publicationYear "
        "('sometime last spring'); using 2017, the year of the record's datestamp "
        "2017-03-21T09:00:00Z."
    ) in transformer.last_warnings
    assert publish(rdm_dc, data)["metadata"]["publication_date"] == "2017"

    issued = BARE.replace(PUBLICATION_YEAR, "").replace(
        AVAILABLE, '<dates><date dateType="Issued">spring 2016</date></dates>'
    )
    transformer.transform(harvested(issued, datestamp="2017-03-21"))
    assert (
        "Publication date: no EDTF level 0 date in Issued date or publicationYear "
        "('spring 2016'); using 2017, the year of the record's datestamp 2017-03-21."
    ) in transformer.last_warnings
    undated = BARE.replace(PUBLICATION_YEAR, "").replace(AVAILABLE, "")
    transformer.transform(harvested(undated, datestamp="2017-03-21"))
    assert (
        "Publication date: no Issued date or publicationYear; using 2017, the year of the "
        "record's datestamp 2017-03-21."
    ) in transformer.last_warnings


def test_missing_date_fail_makes_an_undated_record_a_transform_error(rdm_dc, app, monkeypatch):
    """The old behaviour, by configuration or by option; an option wins over the config."""
    spring = harvested(
        BARE.replace(PUBLICATION_YEAR, f"<publicationYear>{SPRING}</publicationYear>")
    )
    message = "no publication date: no Issued date in EDTF form and no publicationYear"
    monkeypatch.setitem(app.config, MISSING_DATE, "fail")
    with pytest.raises(TransformError, match=f"{message} .*'sometime last spring'"):
        DataCiteRDMTransformer().transform(spring)
    kept = DataCiteRDMTransformer(missing_date="datestamp-year").transform(spring)
    assert kept["metadata"]["publication_date"] == "2024"

    monkeypatch.setitem(app.config, MISSING_DATE, "datestamp-year")
    with pytest.raises(TransformError, match=message):
        DataCiteRDMTransformer(missing_date="fail").transform(spring)


def test_each_run_gets_its_own_transformer_and_cache(rdm_dc, transformer):
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer.transform(harvested(oai_datacite(RICH)))
    cached = dict(transformer.vocabularies._entries)
    assert ("affiliations", "01ggx4157") in cached and ("subjects", MESH_CALCIMYCIN) in cached
    transformer.transform(harvested(oai_datacite(RICH)))
    assert transformer.vocabularies._entries == cached  # no new look-ups for the same values

    fresh = current_oai_harvester.transformers.get(TRANSFORMER)
    assert fresh is not transformer and fresh.vocabularies._entries == {}


# -- a harvest through the writer, with a site's chain --------------------------------------
UNDATED = resource(
    f"""<creators><creator><creatorName>Anonymous</creatorName></creator></creators>
    <titles><title>An undated leaflet</title></titles>
    <publicationYear>{SPRING}</publicationYear>"""
)
SPARSE = resource(
    """<creators><creator><creatorName>Lattice Group</creatorName></creator></creators>
    <titles><title>A sparse record</title></titles><publicationYear>2020</publicationYear>
    <language>tlh</language>"""
)


@pytest.fixture()
def corpus() -> Corpus:
    corpus = Corpus()
    for identifier, datestamp in (
        ("rich", datetime(2024, 1, 1, tzinfo=UTC)),
        ("sparse", datetime(2024, 1, 2, tzinfo=UTC)),
        ("undated", datetime(2023, 11, 5, tzinfo=UTC)),
    ):
        corpus.add(
            f"oai:example.org:{identifier}",
            {"title": [identifier]},  # what oai_dc would serve; the harvester asks for oai_datacite
            datestamp=datestamp,
        )
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    return corpus


@pytest.fixture()
def datacite_provider(corpus):
    documents = {
        "oai:example.org:rich": oai_datacite(RICH),
        "oai:example.org:sparse": oai_datacite(SPARSE),
        "oai:example.org:undated": oai_datacite(UNDATED),
    }

    def render(record: CorpusRecord) -> str:
        return documents[record.identifier]

    served = ServedFormat("http://schema.datacite.org/oai/oai-1.1/oai.xsd", OAI_DATACITE_NS, render)
    with OAIPMHProvider(corpus, page_size=2, formats={"oai_datacite": served}) as running:
        yield running


def test_harvest_through_a_sites_chain_stores_every_steps_warnings(rdm_dc, datacite_provider):
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    assert isinstance(current_oai_harvester.transformers.get(SITE_CHAIN), TransformerChain)
    make_harvester(
        datacite_provider.base_url,
        target=RDM_TARGET,
        transformer=SITE_CHAIN,
        metadata_prefix="oai_datacite",
    )

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (3, 0)
    db.session.expire_all()
    rows = {row.oai_identifier: row for row in db.session.scalars(db.select(OAIHarvestedRecord))}
    undated = rows["oai:example.org:undated"]
    assert not undated.errors
    assert undated.warnings == [
        "Publication date: no EDTF level 0 date in Issued date or publicationYear "
        "('sometime last spring'); using 2023, the year of the record's datestamp "
        "2023-11-05T00:00:00Z.",
        "resourceType missing: no matching resource type; using the default 'dataset'.",
        "site: no abstract",
    ]
    published = rdm_dc.read(system_identity, undated.local_pid).to_dict()
    assert published["metadata"]["publication_date"] == "2023"  # datestamp 2023-11-05
    sparse = rows["oai:example.org:sparse"]
    assert not sparse.errors
    assert sparse.warnings == [
        "resourceType missing: no matching resource type; using the default 'dataset'.",
        "language 'tlh': not in the languages vocabulary; dropped.",
        "site: no abstract",
    ]
    published = rdm_dc.read(system_identity, sparse.local_pid).to_dict()
    assert published["metadata"]["resource_type"]["id"] == "dataset"  # the chain's option
    assert published["metadata"]["subjects"] == [{"subject": "harvested"}]
    rich = rdm_dc.read(system_identity, rows["oai:example.org:rich"].local_pid).to_dict()
    assert not rows["oai:example.org:rich"].warnings
    assert rich["pids"]["doi"]["identifier"] == "10.1234/LATTICE.2021"
    assert rich["metadata"]["subjects"][-1] == {"subject": "harvested"}


def test_with_missing_date_fail_the_undated_record_fails_as_before(
    rdm_dc, datacite_provider, app, monkeypatch
):
    monkeypatch.setitem(app.config, MISSING_DATE, "fail")
    make_harvester(
        datacite_provider.base_url,
        target=RDM_TARGET,
        transformer=TRANSFORMER,
        metadata_prefix="oai_datacite",
    )

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (2, 1)
    db.session.expire_all()
    row = db.session.get(OAIHarvestedRecord, ("test", "oai:example.org:undated"))
    assert row.local_pid is None
    assert row.errors[0] == (
        "TransformError: Record oai:example.org:undated has no publication date: no Issued "
        "date in EDTF form "
        "and no publicationYear (RDM needs one); found 'sometime last spring'."
    )
