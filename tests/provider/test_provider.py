"""The OAI-PMH test provider speaks the protocol correctly and each quirk shows on the wire."""

from __future__ import annotations

import gzip
import re
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
import requests
from lxml import etree
from sickle import Sickle
from sickle.oaiexceptions import IdDoesNotExist, NoRecordsMatch

from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.provider import (
    BAD_DATESTAMP,
    UNSAFE_TOKEN_PREFIX,
    OAIPMHProvider,
    StreamedFile,
)

from .conftest import CLOCK, T0

NS = {
    "oai": "http://www.openarchives.org/OAI/2.0/",
    "oai_dc": "http://www.openarchives.org/OAI/2.0/oai_dc/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
}
STRICT = etree.XMLParser(recover=False, resolve_entities=False)


# -- helpers -------------------------------------------------------------------------------
def fetch(provider: OAIPMHProvider, params: dict[str, str], **kwargs) -> requests.Response:
    response = requests.get(provider.base_url, params=params, timeout=10, **kwargs)
    assert response.status_code == 200, response.text
    return response


def oai(provider: OAIPMHProvider, **params: str) -> etree._Element:
    """GET with the given arguments (`from_` for `from`) and parse strictly."""
    if "from_" in params:
        params["from"] = params.pop("from_")
    return etree.fromstring(fetch(provider, params).content, STRICT)


def error_code(root: etree._Element) -> str | None:
    error = root.find("oai:error", NS)
    return None if error is None else error.get("code")


def identifiers(root: etree._Element) -> list[str]:
    return root.xpath("//oai:header/oai:identifier/text()", namespaces=NS)


def token_element(root: etree._Element) -> etree._Element | None:
    return root.find(".//oai:resumptionToken", NS)


def harvest(provider: OAIPMHProvider, verb: str = "ListRecords", **params: str):
    """Follow the token chain by hand; returns (identifiers, parsed pages)."""
    if "from_" in params:
        params["from"] = params.pop("from_")
    params = {"verb": verb, "metadataPrefix": "oai_dc", **params}
    pages = []
    found: list[str] = []
    for _ in range(1000):
        root = etree.fromstring(fetch(provider, params).content, STRICT)
        assert error_code(root) is None, etree.tostring(root)
        pages.append(root)
        found.extend(identifiers(root))
        token = token_element(root)
        if token is None or not token.text:
            return found, pages
        params = {"verb": verb, "resumptionToken": token.text}
    raise AssertionError("token chain does not end")


def expected(corpus: Corpus, **kwargs) -> list[str]:
    return [record.identifier for record in corpus.select(**kwargs)]


# -- Identify ------------------------------------------------------------------------------
def test_identify(provider: OAIPMHProvider) -> None:
    root = oai(provider, verb="Identify")
    identify = root.find("oai:Identify", NS)
    text = {child.tag.split("}")[1]: child.text for child in identify}
    assert text == {
        "repositoryName": "Test provider",
        "baseURL": provider.base_url,
        "protocolVersion": "2.0",
        "adminEmail": "admin@example.org",
        "earliestDatestamp": "2020-01-01T00:00:00Z",
        "deletedRecord": "persistent",
        "granularity": "YYYY-MM-DDThh:mm:ssZ",
    }
    assert root.findtext("oai:responseDate", namespaces=NS) == "2024-06-01T12:00:00Z"
    assert root.find("oai:request", NS).get("verb") == "Identify"
    assert root.findtext("oai:request", namespaces=NS) == provider.base_url


def test_identify_day_granularity_and_options(corpus: Corpus, make_provider) -> None:
    provider = make_provider(
        corpus,
        granularity="day",
        deleted_record="transient",
        repository_name="Ünïcode & <co>",
        admin_email="x@y.cz",
    )
    identify = oai(provider, verb="Identify").find("oai:Identify", NS)
    assert identify.findtext("oai:granularity", namespaces=NS) == "YYYY-MM-DD"
    assert identify.findtext("oai:earliestDatestamp", namespaces=NS) == "2020-01-01"
    assert identify.findtext("oai:deletedRecord", namespaces=NS) == "transient"
    assert identify.findtext("oai:repositoryName", namespaces=NS) == "Ünïcode & <co>"
    assert identify.findtext("oai:adminEmail", namespaces=NS) == "x@y.cz"


def test_response_date_follows_corpus_clock(corpus: Corpus, provider: OAIPMHProvider) -> None:
    corpus.advance_clock(hours=1, seconds=5)
    root = oai(provider, verb="Identify")
    assert root.findtext("oai:responseDate", namespaces=NS) == "2024-06-01T13:00:05Z"


def test_identify_with_sickle(provider: OAIPMHProvider) -> None:
    identify = Sickle(provider.base_url).Identify()
    assert identify.protocolVersion == "2.0"
    assert identify.granularity == "YYYY-MM-DDThh:mm:ssZ"


def test_constructor_validates_options(corpus: Corpus) -> None:
    with pytest.raises(ValueError):
        OAIPMHProvider(corpus, granularity="minutes")
    with pytest.raises(ValueError):
        OAIPMHProvider(corpus, deleted_record="sometimes")
    with pytest.raises(RuntimeError):
        _ = OAIPMHProvider(corpus).base_url


# -- ListMetadataFormats -------------------------------------------------------------------
def test_list_metadata_formats(corpus: Corpus, make_provider) -> None:
    provider = make_provider(corpus, metadata_prefixes=("oai_dc", "marcxml"))
    root = oai(provider, verb="ListMetadataFormats")
    formats = {
        fmt.findtext("oai:metadataPrefix", namespaces=NS): (
            fmt.findtext("oai:schema", namespaces=NS),
            fmt.findtext("oai:metadataNamespace", namespaces=NS),
        )
        for fmt in root.iterfind(".//oai:metadataFormat", NS)
    }
    assert formats["oai_dc"] == (
        "http://www.openarchives.org/OAI/2.0/oai_dc.xsd",
        "http://www.openarchives.org/OAI/2.0/oai_dc/",
    )
    assert set(formats) == {"oai_dc", "marcxml"}
    assert all(schema and namespace for schema, namespace in formats.values())


def test_list_metadata_formats_for_identifier(provider: OAIPMHProvider) -> None:
    root = oai(provider, verb="ListMetadataFormats", identifier="oai:example.org:0000003")
    assert root.xpath("//oai:metadataPrefix/text()", namespaces=NS) == ["oai_dc"]
    root = oai(provider, verb="ListMetadataFormats", identifier="oai:nope")
    assert error_code(root) == "idDoesNotExist"


def test_other_prefix_is_served_in_a_dummy_namespace(corpus: Corpus, make_provider) -> None:
    provider = make_provider(corpus, metadata_prefixes=("oai_dc", "marcxml"))
    root = oai(
        provider, verb="GetRecord", identifier="oai:example.org:0000001", metadataPrefix="marcxml"
    )
    metadata = root.find(".//oai:metadata", NS)[0]
    namespace = oai(provider, verb="ListMetadataFormats").xpath(
        "//oai:metadataFormat[oai:metadataPrefix='marcxml']/oai:metadataNamespace/text()",
        namespaces=NS,
    )[0]
    assert metadata.tag == f"{{{namespace}}}record"
    title = corpus.get("oai:example.org:0000001").metadata["title"][0]
    assert metadata.findtext(f"{{{namespace}}}title") == title


# -- ListSets ------------------------------------------------------------------------------
def test_list_sets(provider: OAIPMHProvider) -> None:
    sets = {s.setSpec: s.setName for s in Sickle(provider.base_url).ListSets()}
    assert sets == {"phys": "Physics", "phys:astro": "Astrophysics", "math": "Mathematics"}


def test_list_sets_is_paged(make_provider) -> None:
    corpus = Corpus(sets={f"s{index:02d}": f"Set {index}" for index in range(25)})
    provider = make_provider(corpus, page_size=10)
    root = oai(provider, verb="ListSets")
    token = token_element(root)
    assert (token.get("completeListSize"), token.get("cursor")) == ("25", "0")
    specs = root.xpath("//oai:setSpec/text()", namespaces=NS)
    while token is not None and token.text:
        root = oai(provider, verb="ListSets", resumptionToken=token.text)
        specs += root.xpath("//oai:setSpec/text()", namespaces=NS)
        token = token_element(root)
    assert specs == list(corpus.sets)
    assert token is not None and token.get("cursor") == "20"
    bad = oai(provider, verb="ListSets", resumptionToken="garbage")
    assert error_code(bad) == "badResumptionToken"


def test_no_set_hierarchy(make_provider) -> None:
    corpus = Corpus.generate(3, sets={})
    provider = make_provider(corpus)
    assert error_code(oai(provider, verb="ListSets")) == "noSetHierarchy"
    root = oai(provider, verb="ListRecords", metadataPrefix="oai_dc", set="phys")
    assert error_code(root) == "noSetHierarchy"
    assert len(identifiers(oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc"))) == 3


# -- ListRecords / ListIdentifiers ---------------------------------------------------------
@pytest.mark.parametrize("verb", ["ListRecords", "ListIdentifiers"])
def test_token_chain_is_complete(corpus: Corpus, provider: OAIPMHProvider, verb: str) -> None:
    found, pages = harvest(provider, verb)
    assert found == expected(corpus)
    assert len(pages) == 3
    tokens = [token_element(page) for page in pages]
    assert [(t.get("completeListSize"), t.get("cursor")) for t in tokens] == [
        ("25", "0"),
        ("25", "10"),
        ("25", "20"),
    ]
    assert tokens[-1].text is None  # the final page ends with an empty token
    assert len({t.text for t in tokens[:-1]}) == 2
    for page in pages[1:]:
        assert page.find("oai:request", NS).get("resumptionToken")


def test_single_page_has_no_token(corpus: Corpus, make_provider) -> None:
    provider = make_provider(corpus, page_size=100)
    root = oai(provider, verb="ListRecords", metadataPrefix="oai_dc")
    assert len(identifiers(root)) == 25
    assert token_element(root) is None


def test_list_records_content(corpus: Corpus, provider: OAIPMHProvider) -> None:
    records = list(Sickle(provider.base_url).ListRecords(metadataPrefix="oai_dc"))
    assert [r.header.identifier for r in records] == expected(corpus)
    for record in records:
        source = corpus.get(record.header.identifier)
        assert record.header.datestamp == source.datestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert record.header.setSpecs == list(source.sets)
        for element, values in source.metadata.items():
            assert record.metadata[element] == values


def test_list_identifiers_carries_headers_only(provider: OAIPMHProvider) -> None:
    root = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    assert root.find(".//oai:metadata", NS) is None
    assert root.find(".//oai:record", NS) is None
    assert len(root.findall("oai:ListIdentifiers/oai:header", NS)) == 10


def test_dublin_core_namespaces_and_schema_location(provider: OAIPMHProvider) -> None:
    response = fetch(provider, {"verb": "ListRecords", "metadataPrefix": "oai_dc"})
    assert response.content.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    assert response.headers["Content-Type"] == "text/xml; charset=utf-8"
    root = etree.fromstring(response.content, STRICT)
    assert root.tag == "{http://www.openarchives.org/OAI/2.0/}OAI-PMH"
    assert root.get(f"{{{NS['xsi']}}}schemaLocation").endswith("OAI-PMH.xsd")
    dc = root.find(".//oai:metadata/oai_dc:dc", NS)
    assert dc.get(f"{{{NS['xsi']}}}schemaLocation") == (
        "http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
    )
    assert all(child.tag.startswith(f"{{{NS['dc']}}}") for child in dc)


def test_values_are_escaped(corpus: Corpus, provider: OAIPMHProvider) -> None:
    nasty = "A <b>bold</b> & \"quoted\" 'title' ]]> Ωmega"
    corpus.add("oai:x&y<z>", {"title": [nasty], "creator": ["Tom & Jerry"]}, sets=["math"])
    root = oai(provider, verb="GetRecord", identifier="oai:x&y<z>", metadataPrefix="oai_dc")
    assert root.findtext(".//dc:title", namespaces=NS) == nasty
    assert root.findtext(".//dc:creator", namespaces=NS) == "Tom & Jerry"
    assert identifiers(root) == ["oai:x&y<z>"]
    assert root.find("oai:request", NS).get("identifier") == "oai:x&y<z>"


def test_post_requests(corpus: Corpus, provider: OAIPMHProvider) -> None:
    found = [
        r.header.identifier
        for r in Sickle(provider.base_url, http_method="POST").ListRecords(metadataPrefix="oai_dc")
    ]
    assert found == expected(corpus)
    assert provider.requests_for("ListRecords")[-1]["resumptionToken"]
    # A POST that is not a form carries no arguments.
    response = requests.post(
        provider.base_url, data="verb=Identify", headers={"Content-Type": "text/plain"}, timeout=10
    )
    assert error_code(etree.fromstring(response.content, STRICT)) == "badVerb"


def test_selection_is_reevaluated_for_each_page(corpus: Corpus, provider: OAIPMHProvider) -> None:
    first = oai(provider, verb="ListRecords", metadataPrefix="oai_dc")
    corpus.add("oai:late", {"title": ["Late"]}, datestamp=CLOCK)
    second = oai(provider, verb="ListRecords", resumptionToken=token_element(first).text)
    assert token_element(second).get("completeListSize") == "26"
    third = oai(provider, verb="ListRecords", resumptionToken=token_element(second).text)
    assert identifiers(third)[-1] == "oai:late"


def test_changes_between_harvests(corpus: Corpus, provider: OAIPMHProvider) -> None:
    harvest(provider)
    corpus.advance_clock(seconds=1)
    corpus.update("oai:example.org:0000002", metadata={"title": ["Changed"]})
    corpus.delete("oai:example.org:0000004")
    corpus.purge("oai:example.org:0000005")
    found, pages = harvest(provider)
    assert found == expected(corpus)
    assert "oai:example.org:0000005" not in found
    assert found[-2:] == ["oai:example.org:0000002", "oai:example.org:0000004"]
    incremental, _ = harvest(provider, from_="2024-06-01T12:00:01Z")
    assert incremental == ["oai:example.org:0000002", "oai:example.org:0000004"]
    root = oai(
        provider, verb="GetRecord", identifier="oai:example.org:0000002", metadataPrefix="oai_dc"
    )
    assert root.findtext(".//dc:title", namespaces=NS) == "Changed"


# -- sets ----------------------------------------------------------------------------------
def test_hierarchical_sets(corpus: Corpus, provider: OAIPMHProvider) -> None:
    by_set = {
        spec: [r.identifier for r in corpus.select() if spec in r.sets] for spec in corpus.sets
    }
    assert all(by_set.values()), "the corpus should populate every set"
    found, _ = harvest(provider, set="phys")
    assert found == sorted(by_set["phys"] + by_set["phys:astro"])
    found, _ = harvest(provider, set="phys:astro")
    assert found == by_set["phys:astro"]
    found, _ = harvest(provider, "ListIdentifiers", set="math")
    assert found == by_set["math"]
    root = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc", set="math")
    assert set(root.xpath("//oai:setSpec/text()", namespaces=NS)) == {"math"}


@pytest.mark.parametrize("spec", ["ph", "unknown", "phys:astro:deep"])
def test_set_without_records_is_no_records_match(provider: OAIPMHProvider, spec: str) -> None:
    root = oai(provider, verb="ListRecords", metadataPrefix="oai_dc", set=spec)
    assert error_code(root) == "noRecordsMatch"


# -- from / until --------------------------------------------------------------------------
def _stamp(hours: int) -> str:
    return (T0 + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_from_until_seconds_are_inclusive(corpus: Corpus, provider: OAIPMHProvider) -> None:
    found, _ = harvest(provider, from_=_stamp(5), until=_stamp(9))
    assert found == [f"oai:example.org:{index:07d}" for index in range(5, 10)]
    found, _ = harvest(provider, "ListIdentifiers", from_=_stamp(24))
    assert found == ["oai:example.org:0000024"]
    found, _ = harvest(provider, until=_stamp(0))
    assert found == ["oai:example.org:0000000"]
    found, _ = harvest(provider, from_=_stamp(7), until=_stamp(7))
    assert found == ["oai:example.org:0000007"]


def test_seconds_server_accepts_day_values(corpus: Corpus, provider: OAIPMHProvider) -> None:
    found, _ = harvest(provider, until="2020-01-01")
    assert len(found) == 24
    found, _ = harvest(provider, from_="2020-01-02", until="2020-01-02")
    assert found == ["oai:example.org:0000024"]


def test_day_granularity(corpus: Corpus, make_provider) -> None:
    provider = make_provider(corpus, granularity="day", page_size=10)
    found, pages = harvest(provider, until="2020-01-01")
    assert found == expected(corpus)[:24]
    datestamps = {d for page in pages for d in page.xpath("//oai:datestamp/text()", namespaces=NS)}
    assert datestamps == {"2020-01-01"}
    found, _ = harvest(provider, from_="2020-01-02")
    assert found == ["oai:example.org:0000024"]
    found, _ = harvest(provider, from_="2020-01-01", until="2020-01-01")
    assert len(found) == 24
    root = oai(provider, verb="ListRecords", metadataPrefix="oai_dc", from_="2020-01-01T00:00:00Z")
    assert error_code(root) == "badArgument"
    root = oai(provider, verb="ListRecords", metadataPrefix="oai_dc", until="2020-01-01T23:59:59Z")
    assert error_code(root) == "badArgument"


@pytest.mark.parametrize(
    "window",
    [
        {"from": "2020-01-01", "until": "2020-01-02T00:00:00Z"},  # mixed granularities
        {"from": "2020-01-01T00:00:00Z", "until": "2020-01-02"},
        {"from": "2020-01-02T00:00:00Z", "until": "2020-01-01T00:00:00Z"},  # from > until
        {"from": "2020-01-02", "until": "2020-01-01"},
        {"from": "2020-13-01"},
        {"from": "2020-02-30"},
        {"until": "2020-1-1"},
        {"from": "yesterday"},
        {"from": "2020-01-01T00:00:00"},
        {"from": "2020-01-01T00:00:00.000Z"},
        {"until": "2020-01-01T25:00:00Z"},
        {"from": "2020-01-01T00:00:00+01:00"},
    ],
)
def test_bad_dates_are_bad_argument(provider: OAIPMHProvider, window: dict[str, str]) -> None:
    params = {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc", **window}
    root = etree.fromstring(fetch(provider, params).content, STRICT)
    assert error_code(root) == "badArgument"


def test_empty_window_is_no_records_match(provider: OAIPMHProvider) -> None:
    root = oai(provider, verb="ListRecords", metadataPrefix="oai_dc", from_="2021-01-01T00:00:00Z")
    assert error_code(root) == "noRecordsMatch"
    with pytest.raises(NoRecordsMatch):
        list(Sickle(provider.base_url).ListIdentifiers(metadataPrefix="oai_dc", until="2019-12-31"))


# -- deletedRecord -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["persistent", "transient"])
def test_tombstones_are_served(corpus: Corpus, make_provider, mode: str) -> None:
    corpus.delete("oai:example.org:0000003")
    provider = make_provider(corpus, deleted_record=mode, page_size=10)
    found, pages = harvest(provider)
    assert found == expected(corpus)
    tombstones = [
        record
        for page in pages
        for record in page.iterfind(".//oai:record", NS)
        if record.find("oai:header", NS).get("status") == "deleted"
    ]
    assert len(tombstones) == 1
    assert tombstones[0].find("oai:metadata", NS) is None
    assert (
        tombstones[0].findtext("oai:header/oai:identifier", namespaces=NS)
        == "oai:example.org:0000003"
    )
    root = oai(
        provider, verb="GetRecord", identifier="oai:example.org:0000003", metadataPrefix="oai_dc"
    )
    assert root.find(".//oai:header", NS).get("status") == "deleted"
    assert root.find(".//oai:metadata", NS) is None
    live = [
        r.header.identifier
        for r in Sickle(provider.base_url).ListRecords(metadataPrefix="oai_dc", ignore_deleted=True)
    ]
    assert "oai:example.org:0000003" not in live and len(live) == 24


def test_deleted_record_no_hides_deleted_records(corpus: Corpus, make_provider) -> None:
    corpus.delete("oai:example.org:0000003")
    corpus.delete("oai:example.org:0000011")
    provider = make_provider(corpus, deleted_record="no", page_size=10)
    for verb in ("ListRecords", "ListIdentifiers"):
        found, pages = harvest(provider, verb)
        assert found == expected(corpus, include_deleted=False)
        assert token_element(pages[0]).get("completeListSize") == "23"
        assert not any(page.xpath("//oai:header[@status]", namespaces=NS) for page in pages)
    root = oai(
        provider, verb="GetRecord", identifier="oai:example.org:0000003", metadataPrefix="oai_dc"
    )
    assert error_code(root) == "idDoesNotExist"
    root = oai(
        provider,
        verb="ListIdentifiers",
        metadataPrefix="oai_dc",
        from_=_stamp(11),
        until=_stamp(11),
    )
    assert error_code(root) == "noRecordsMatch"


# -- GetRecord -----------------------------------------------------------------------------
def test_get_record(corpus: Corpus, provider: OAIPMHProvider) -> None:
    record = Sickle(provider.base_url).GetRecord(
        identifier="oai:example.org:0000007", metadataPrefix="oai_dc"
    )
    source = corpus.get("oai:example.org:0000007")
    assert record.header.identifier == source.identifier
    assert record.header.datestamp == _stamp(7)
    assert record.metadata["title"] == source.metadata["title"]
    with pytest.raises(IdDoesNotExist):
        Sickle(provider.base_url).GetRecord(identifier="oai:missing", metadataPrefix="oai_dc")


def test_get_record_errors(provider: OAIPMHProvider) -> None:
    root = oai(
        provider, verb="GetRecord", identifier="oai:example.org:0000007", metadataPrefix="mods"
    )
    assert error_code(root) == "cannotDisseminateFormat"
    assert root.find("oai:request", NS).get("metadataPrefix") == "mods"
    assert error_code(oai(provider, verb="GetRecord", metadataPrefix="oai_dc")) == "badArgument"
    assert (
        error_code(oai(provider, verb="GetRecord", identifier="oai:example.org:0000007"))
        == "badArgument"
    )


# -- protocol errors -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "",
        "verb=",
        "verb=ListThings",
        "verb=Identify&verb=Identify",
        "verb=identify",
        "metadataPrefix=oai_dc",
    ],
)
def test_bad_verb(provider: OAIPMHProvider, query: str) -> None:
    response = requests.get(f"{provider.base_url}?{query}", timeout=10)
    assert response.status_code == 200
    root = etree.fromstring(response.content, STRICT)
    assert error_code(root) == "badVerb"
    assert root.find("oai:request", NS).attrib == {}


@pytest.mark.parametrize(
    "query",
    [
        "verb=Identify&foo=bar",
        "verb=Identify&metadataPrefix=oai_dc",
        "verb=ListRecords",
        "verb=ListIdentifiers&set=phys",
        "verb=ListRecords&metadataPrefix=oai_dc&metadataPrefix=oai_dc",
        "verb=ListRecords&metadataPrefix=oai_dc&resumptionToken=abc",
        "verb=ListSets&resumptionToken=abc&set=phys",
        "verb=ListRecords&metadataPrefix=",
        "verb=ListRecords&metadataPrefix=oai_dc&identifier=oai:example.org:0000001",
        "verb=GetRecord&identifier=oai:example.org:0000001&metadataPrefix=oai_dc&from=2020-01-01",
        "verb=ListMetadataFormats&set=phys",
    ],
)
def test_bad_argument(provider: OAIPMHProvider, query: str) -> None:
    response = requests.get(f"{provider.base_url}?{query}", timeout=10)
    assert response.status_code == 200
    root = etree.fromstring(response.content, STRICT)
    assert error_code(root) == "badArgument"
    assert root.find("oai:request", NS).attrib == {}


def test_cannot_disseminate_format(provider: OAIPMHProvider) -> None:
    for verb in ("ListRecords", "ListIdentifiers"):
        assert (
            error_code(oai(provider, verb=verb, metadataPrefix="marc21"))
            == "cannotDisseminateFormat"
        )


@pytest.mark.parametrize("token", ["garbage!", "abc", "eyJ2IjoxfQ", "a%2F b+c/d=!!!"])
def test_bad_resumption_token(provider: OAIPMHProvider, token: str) -> None:
    root = oai(provider, verb="ListRecords", resumptionToken=token)
    assert error_code(root) == "badResumptionToken"


def test_token_of_another_verb_is_rejected(provider: OAIPMHProvider) -> None:
    token = token_element(oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")).text
    root = oai(provider, verb="ListRecords", resumptionToken=token)
    assert error_code(root) == "badResumptionToken"
    assert root.find("oai:request", NS).get("resumptionToken") == token
    assert identifiers(oai(provider, verb="ListIdentifiers", resumptionToken=token))


def test_unknown_path_is_404(provider: OAIPMHProvider) -> None:
    response = requests.get(
        provider.base_url.replace("/oai", "/other"), params={"verb": "Identify"}, timeout=10
    )
    assert response.status_code == 404


# -- quirks --------------------------------------------------------------------------------
def test_fail_requests(provider: OAIPMHProvider) -> None:
    provider.quirks.fail_requests = 2
    for _ in range(2):
        response = requests.get(provider.base_url, params={"verb": "Identify"}, timeout=10)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "0"
    assert provider.quirks.fail_requests == 0
    assert (
        requests.get(provider.base_url, params={"verb": "Identify"}, timeout=10).status_code == 200
    )
    assert len(provider.requests_for("Identify")) == 3


def test_fail_status_and_retry_after_variants(provider: OAIPMHProvider) -> None:
    provider.quirks.fail_requests = 1
    provider.quirks.fail_status = 500
    provider.quirks.retry_after = None
    response = requests.get(provider.base_url, params={"verb": "Identify"}, timeout=10)
    assert response.status_code == 500 and "Retry-After" not in response.headers
    provider.quirks.fail_requests = 1
    provider.quirks.fail_status = 429
    provider.quirks.retry_after = "Wed, 21 Oct 2015 07:28:00 GMT"
    response = requests.get(provider.base_url, params={"verb": "Identify"}, timeout=10)
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "Wed, 21 Oct 2015 07:28:00 GMT"


def test_sickle_retries_through_failures(corpus: Corpus, provider: OAIPMHProvider) -> None:
    provider.quirks.fail_requests = 2
    sickle = Sickle(provider.base_url, max_retries=3, default_retry_after=0)
    assert [r.header.identifier for r in sickle.ListRecords(metadataPrefix="oai_dc")] == expected(
        corpus
    )


def test_expire_tokens_after(provider: OAIPMHProvider) -> None:
    provider.quirks.expire_tokens_after = 1
    first = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    second = oai(provider, verb="ListIdentifiers", resumptionToken=token_element(first).text)
    assert len(identifiers(second)) == 10
    expired_token = token_element(second).text
    assert (
        error_code(oai(provider, verb="ListIdentifiers", resumptionToken=expired_token))
        == "badResumptionToken"
    )
    # Tokens issued before the expiry stay dead, even when the quirk is switched off.
    provider.quirks.expire_tokens_after = None
    assert (
        error_code(oai(provider, verb="ListIdentifiers", resumptionToken=expired_token))
        == "badResumptionToken"
    )
    assert (
        error_code(oai(provider, verb="ListIdentifiers", resumptionToken=token_element(first).text))
        == "badResumptionToken"
    )
    # A restarted list gets fresh tokens that work.
    found, _ = harvest(provider, "ListIdentifiers")
    assert len(found) == 25


def test_expiry_repeats_after_the_counter_resets(provider: OAIPMHProvider) -> None:
    provider.quirks.expire_tokens_after = 1
    for _ in range(2):
        first = oai(provider, verb="ListRecords", metadataPrefix="oai_dc")
        second = oai(provider, verb="ListRecords", resumptionToken=token_element(first).text)
        assert error_code(second) is None
        third = oai(provider, verb="ListRecords", resumptionToken=token_element(second).text)
        assert error_code(third) == "badResumptionToken"


def test_unsafe_tokens(corpus: Corpus, provider: OAIPMHProvider) -> None:
    provider.quirks.token_style = "unsafe"
    first = oai(provider, verb="ListRecords", metadataPrefix="oai_dc")
    token = token_element(first).text
    assert token.startswith(UNSAFE_TOKEN_PREFIX)
    assert all(char in token for char in "%=+/ ")
    # Pasted into the URL without encoding, the token is mangled and rejected.
    raw = requests.get(f"{provider.base_url}?verb=ListRecords&resumptionToken={token}", timeout=10)
    assert error_code(etree.fromstring(raw.content, STRICT)) == "badResumptionToken"
    # Properly encoded (GET and POST), the chain is complete.
    found, _ = harvest(provider)
    assert found == expected(corpus)
    post = Sickle(provider.base_url, http_method="POST")
    assert [r.header.identifier for r in post.ListRecords(metadataPrefix="oai_dc")] == expected(
        corpus
    )


def test_repeat_token(provider: OAIPMHProvider) -> None:
    provider.quirks.repeat_token = True
    first = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    token = token_element(first).text
    seen = []
    for _ in range(5):
        page = oai(provider, verb="ListIdentifiers", resumptionToken=token)
        assert token_element(page).text == token
        seen.append(identifiers(page))
    assert all(ids == seen[0] for ids in seen)


def test_repeat_token_on_a_single_page_list(corpus: Corpus, make_provider) -> None:
    provider = make_provider(corpus, page_size=100)
    provider.quirks.repeat_token = True
    first = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    again = oai(provider, verb="ListIdentifiers", resumptionToken=token_element(first).text)
    assert identifiers(again) == identifiers(first)
    assert token_element(again).text == token_element(first).text


def test_empty_pages_with_token(corpus: Corpus, provider: OAIPMHProvider) -> None:
    provider.quirks.empty_pages_with_token = 2
    found, pages = harvest(provider)
    assert found == expected(corpus)
    assert [len(identifiers(page)) for page in pages] == [10, 0, 0, 10, 5]
    tokens = [token_element(page).text for page in pages[:-1]]
    assert len(set(tokens)) == len(tokens)
    assert provider.quirks.empty_pages_with_token == 0


def test_final_token_absent(corpus: Corpus, provider: OAIPMHProvider) -> None:
    provider.quirks.final_token = "absent"
    found, pages = harvest(provider)
    assert found == expected(corpus)
    assert token_element(pages[-1]) is None
    assert token_element(pages[0]) is not None


def test_control_characters(corpus: Corpus, provider: OAIPMHProvider) -> None:
    provider.quirks.control_characters = True
    response = fetch(provider, {"verb": "ListRecords", "metadataPrefix": "oai_dc"})
    assert b"\x0b" in response.content and b"\x1a" in response.content
    with pytest.raises(etree.XMLSyntaxError):
        etree.fromstring(response.content, STRICT)
    cleaned = re.sub(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]", b"", response.content)
    root = etree.fromstring(cleaned, STRICT)
    titles = root.xpath("//dc:title/text()", namespaces=NS)
    assert titles == [corpus.get(i).metadata["title"][0] for i in identifiers(root)]
    dirty = [
        t
        for t in re.findall(rb"<dc:title>(.*?)</dc:title>", response.content, re.S)
        if b"\x0b" in t
    ]
    assert 0 < len(dirty) < len(titles)  # some records, not all
    raw = fetch(
        provider,
        {"verb": "GetRecord", "identifier": "oai:example.org:0000001", "metadataPrefix": "oai_dc"},
    )
    assert b"\x0b" in raw.content
    provider.quirks.control_characters = False
    etree.fromstring(
        fetch(provider, {"verb": "ListRecords", "metadataPrefix": "oai_dc"}).content, STRICT
    )


def test_malformed_xml(provider: OAIPMHProvider) -> None:
    provider.quirks.malformed_xml = True
    for params in (
        {"verb": "ListRecords", "metadataPrefix": "oai_dc"},
        {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"},
        {"verb": "GetRecord", "identifier": "oai:example.org:0000001", "metadataPrefix": "oai_dc"},
        {"verb": "ListRecords", "metadataPrefix": "nope"},
    ):
        with pytest.raises(etree.XMLSyntaxError):
            etree.fromstring(fetch(provider, params).content, STRICT)
    # Identify stays well-formed, so harvesters get as far as the harvest.
    assert oai(provider, verb="Identify").find("oai:Identify", NS) is not None
    provider.quirks.malformed_xml = False
    assert len(identifiers(oai(provider, verb="ListRecords", metadataPrefix="oai_dc"))) == 10


def test_bad_datestamps(provider: OAIPMHProvider) -> None:
    provider.quirks.bad_datestamp_identifiers.add("oai:example.org:0000002")
    root = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    stamps = dict(
        zip(
            identifiers(root),
            root.xpath("//oai:header/oai:datestamp/text()", namespaces=NS),
            strict=True,
        )
    )
    assert stamps["oai:example.org:0000002"] == BAD_DATESTAMP
    assert stamps["oai:example.org:0000003"] == _stamp(3)


def test_offset_datestamps(provider: OAIPMHProvider) -> None:
    provider.quirks.offset_datestamps = True
    root = oai(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    stamps = root.xpath("//oai:header/oai:datestamp/text()", namespaces=NS)
    assert stamps[0] == "2020-01-01T00:00:00+00:00"
    assert all(stamp.endswith("+00:00") for stamp in stamps)
    # responseDate is not a record datestamp and keeps the Z.
    assert root.findtext("oai:responseDate", namespaces=NS).endswith("Z")


def test_gzip(provider: OAIPMHProvider) -> None:
    params = {"verb": "ListRecords", "metadataPrefix": "oai_dc"}
    plain = fetch(provider, params)
    assert "Content-Encoding" not in plain.headers
    provider.quirks.gzip = True
    identify = oai(provider, verb="Identify")
    assert identify.xpath("//oai:compression/text()", namespaces=NS) == ["gzip"]
    compressed = fetch(provider, params)  # requests sends Accept-Encoding: gzip
    assert compressed.headers["Content-Encoding"] == "gzip"
    assert compressed.content == plain.content
    raw = requests.get(provider.base_url, params=params, stream=True, timeout=10)
    assert gzip.decompress(raw.raw.read(decode_content=False)) == plain.content
    identity = fetch(provider, params, headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in identity.headers


def test_delay_seconds(provider: OAIPMHProvider) -> None:
    provider.quirks.delay_seconds = 0.5
    with pytest.raises(requests.Timeout):
        requests.get(provider.base_url, params={"verb": "Identify"}, timeout=0.1)
    provider.quirks.delay_seconds = 0.0
    assert oai(provider, verb="Identify").find("oai:Identify", NS) is not None


def test_requests_are_served_concurrently(provider: OAIPMHProvider) -> None:
    # One at a time, four requests would take 4 s: the bound leaves a busy machine 1.5 s.
    provider.quirks.delay_seconds = 1.0
    results: list[int] = []

    def call() -> None:
        results.append(
            requests.get(provider.base_url, params={"verb": "Identify"}, timeout=5).status_code
        )

    threads = [threading.Thread(target=call) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [200] * 4
    assert time.monotonic() - started < 2.5


def test_drop_set_on_resume(corpus: Corpus, make_provider) -> None:
    provider = make_provider(corpus, page_size=3)
    provider.quirks.drop_set_on_resume = True
    in_math = {r.identifier for r in corpus.select(set_spec="math")}
    found, pages = harvest(provider, set="math")
    assert set(identifiers(pages[0])) <= in_math
    assert set(found) - in_math, "pages after the first ignore the set"


# -- bookkeeping ---------------------------------------------------------------------------
def test_requests_are_recorded(provider: OAIPMHProvider) -> None:
    oai(provider, verb="Identify")
    harvest(provider, "ListIdentifiers", set="phys")
    requests.post(provider.base_url, data={"verb": "ListSets"}, timeout=10)
    assert provider.requests[0] == {"verb": "Identify"}
    listing = provider.requests_for("ListIdentifiers")
    assert listing[0] == {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc", "set": "phys"}
    assert all(set(args) == {"verb", "resumptionToken"} for args in listing[1:])
    assert provider.requests_for("ListSets") == [{"verb": "ListSets"}]


def test_stop_and_context_manager(corpus: Corpus) -> None:
    with OAIPMHProvider(corpus) as provider:
        session = requests.Session()
        assert (
            session.get(provider.base_url, params={"verb": "Identify"}, timeout=5).status_code
            == 200
        )
    with pytest.raises(requests.ConnectionError):
        session.get(provider.base_url, params={"verb": "Identify"}, timeout=5)
    with pytest.raises(requests.ConnectionError):
        requests.get(provider.base_url, params={"verb": "Identify"}, timeout=5)


def test_selection_cache_follows_corpus_changes(corpus: Corpus, provider: OAIPMHProvider) -> None:
    version = corpus.version
    assert len(harvest(provider, set="math")[0]) == len(corpus.select(set_spec="math"))
    corpus.add(
        "oai:new",
        {"title": ["New"]},
        sets=["math"],
        datestamp=datetime(2020, 1, 1, 5, 30, tzinfo=UTC),
    )
    assert corpus.version == version + 1
    found, _ = harvest(provider, set="math")
    assert "oai:new" in found
    assert found == expected(corpus, set_spec="math")


def test_a_file_maker_may_stream_a_body_of_known_length():
    """A StreamedFile goes out chunk by chunk with its Content-Length and ETag (the
    benchmark's 1 GiB file never sits whole in the provider); bytes still work as before."""
    made: list[int] = []

    def chunks():
        for index in range(3):
            made.append(index)
            yield bytes([65 + index]) * 1000

    with OAIPMHProvider(Corpus()) as provider:
        provider.file_maker = lambda path: (
            StreamedFile(size=3000, chunks=chunks, etag='"s1"') if path == "/files/big" else None
        )
        provider.serve_file("small", b"small body")
        response = requests.get(provider.file_url("big"), timeout=10)
        assert response.status_code == 200
        assert response.headers["Content-Length"] == "3000"
        assert response.headers["ETag"] == '"s1"'
        assert response.content == b"A" * 1000 + b"B" * 1000 + b"C" * 1000
        assert made == [0, 1, 2]
        again = requests.get(
            provider.file_url("big"), headers={"If-None-Match": '"s1"'}, timeout=10
        )
        assert again.status_code == 304
        assert requests.get(provider.file_url("small"), timeout=10).content == b"small body"
        assert requests.get(provider.file_url("other"), timeout=10).status_code == 404
