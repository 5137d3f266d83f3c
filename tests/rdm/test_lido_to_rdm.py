"""The ``lido_rdm`` transformer (museum objects) against the real RDM records service, and
harvested through OAI-PMH from the bundled provider's ``lido`` prefix."""

from __future__ import annotations

import configparser
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from lxml import etree
from oaiharvest_test_support.rdm import MUSEUM_VOCABULARY_ENTRIES

from oarepo_oaipmh_harvester.testing.corpus import (
    _lido_event,
    lido_corpus,
    lido_document,
)
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider
from oarepo_oaipmh_harvester.transformers import TransformError
from oarepo_oaipmh_harvester.transformers.rdm.lido import LIDORDMTransformer
from oarepo_oaipmh_harvester.transformers.rdm.lido_read import (
    display_date,
    edtf_of,
    gml_geometry,
    license_id_of_text,
    lido_record,
)

from .conftest import RDM_TARGET
from .helpers import tracking
from .test_datacite_to_rdm import harvested
from .test_dc_to_rdm import publish

TRANSFORMER = "lido_rdm"
ROOT = Path(__file__).resolve().parents[2]
GND_HEDA = "gnd:118547739"
EXTRA_VOCABULARIES = MUSEUM_VOCABULARY_ENTRIES


# -- no application --------------------------------------------------------------------------
def test_setup_cfg_declares_the_entry_point():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    declared = config["options.entry_points"]["oarepo_oaipmh_harvester.transformers"]
    assert (
        "lido_rdm = oarepo_oaipmh_harvester.transformers.rdm.lido:LIDORDMTransformer"
        in declared.splitlines()
    )


def test_dates_places_and_licenses_are_read_without_an_application():
    assert edtf_of("1643", "1645") == "1643/1645"
    assert edtf_of("1901-05-02", "1901-05-02") == "1901-05-02"
    assert edtf_of("", "1899") == "1899" and edtf_of("-0500", "") is None
    assert display_date("1642") == ("1642", False)
    assert display_date("1890–1895") == ("1890/1895", False)
    assert display_date("ca. 1650") == ("1650", True)
    assert display_date("um 1643 - 1645") == ("1643/1645", True)
    assert display_date("17th century") == ("1600/1699", True)
    assert display_date("17. Jahrhundert") == ("1600/1699", True)
    assert display_date("undated") == (None, False)
    point = etree.fromstring(
        '<gml xmlns:g="http://www.opengis.net/gml"><g:Point><g:pos>52.38 4.64</g:pos></g:Point></gml>'
    )
    assert gml_geometry(point) == {"type": "Point", "coordinates": [4.64, 52.38]}
    ring = etree.fromstring("<gml><posList>51 2 51 5 55 5</posList></gml>")
    assert gml_geometry(ring)["coordinates"] == [
        [[2.0, 51.0], [5.0, 51.0], [5.0, 55.0], [2.0, 51.0]]
    ]
    assert gml_geometry(etree.fromstring("<gml><pos>95 200</pos></gml>")) is None
    assert license_id_of_text("CC BY-SA 4.0") == "cc-by-sa-4.0"
    assert license_id_of_text("CC0 1.0") == "cc0-1.0"
    assert license_id_of_text("Public Domain Mark 1.0") == "cc-pdm-1.0"
    assert license_id_of_text("All rights reserved") is None


def test_centuries_and_lone_years_of_display_dates():
    from oarepo_oaipmh_harvester.transformers.rdm.lido_read import display_date

    for text, expected in [
        ("Începutul sec. XX", ("1900/1999", True)),
        ("prima jumătate a secolului al XVI-lea", ("1500/1599", True)),
        ("XVIe siècle", ("1500/1599", True)),
        ("17. Jahrhundert", ("1600/1699", True)),
        ("Pusă în serviciu în 1914", ("1914", True)),
        ("Louis XIV", (None, False)),
        ("2. Hälfte 20. Jahrhundert", (None, False)),
    ]:
        assert display_date(text) == expected, text


def test_which_events_make_the_object():
    """Designing, drawing, photographing make it as production does; LIDO 1.1 names the type
    by a skos:Concept URI only; an acquisition or a commission does not."""
    from oarepo_oaipmh_harvester.transformers.rdm.lido_read import event_kind

    def kind(event_type: str) -> str:
        event = etree.fromstring(
            '<lido:event xmlns:lido="http://www.lido-schema.org" '
            'xmlns:skos="http://www.w3.org/2004/02/skos/core#" '
            'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            f"<lido:eventType>{event_type}</lido:eventType></lido:event>"
        )
        return event_kind(event)[0]

    assert kind("<lido:term>Gezeichnet</lido:term>") == "made"
    assert kind("<lido:term>Fotografische Aufnahme</lido:term>") == "made"
    assert kind("<lido:term>Hergestellt</lido:term>") == "made"
    assert (
        kind(
            '<skos:Concept rdf:about="http://terminology.lido-schema.org/lido00007">'
            '<skos:prefLabel xml:lang="en">Production</skos:prefLabel></skos:Concept>'
        )
        == "made"
    )
    assert (
        kind('<skos:Concept rdf:about="http://terminology.lido-schema.org/lido00224"/>') == "made"
    )
    assert (
        kind("<lido:conceptID>http://erlangen-crm.org/current/E12_Production</lido:conceptID>")
        == "made"
    )
    assert kind("<lido:term>Beauftragt</lido:term>") == "other"
    assert (
        kind('<skos:Concept rdf:about="http://terminology.lido-schema.org/lido00226"/>') == "other"
    )
    assert kind("<lido:term>Finding</lido:term>") == "found"


def test_the_lido_record_is_found_bare_or_in_its_wrap():
    wrapped = etree.fromstring(lido_document("1", version="1.0"))
    assert etree.QName(lido_record(wrapped, "x")).localname == "lido"
    bare = etree.fromstring(lido_document("2", wrapped=False))
    assert lido_record(bare, "x") is bare
    with pytest.raises(TransformError, match="no LIDO record"):
        lido_record(etree.fromstring("<dc xmlns='http://example.org/'/>"), "x")
    with pytest.raises(TransformError, match="has no metadata"):
        lido_record(None, "oai:x:1")


# -- against the RDM app ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def app_config(app_config):
    """The transformer registered by configuration too (the venv's entry points may be
    another worktree's; setup.cfg declares it, see above)."""
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: LIDORDMTransformer,
    }
    return app_config


@pytest.fixture(scope="module")
def museum_vocabularies(rdm_vocabularies):
    from oaiharvest_test_support.rdm import load_vocabularies

    load_vocabularies(EXTRA_VOCABULARIES)


@pytest.fixture()
def rdm_lido(rdm, museum_vocabularies):
    return rdm


@pytest.fixture()
def transformer(rdm_lido) -> LIDORDMTransformer:
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    return current_oai_harvester.transformers.get(TRANSFORMER)


def lido_corpus_documents() -> dict[str, str]:
    return {
        record.identifier.rsplit(":", 1)[-1]: record.metadata["lido"][0]
        for record in lido_corpus().select()
    }


DOCUMENTS = lido_corpus_documents()


@pytest.mark.parametrize("name", ["lido-1.0", "lido-1.1"])
def test_a_rich_lido_record_is_published_with_every_value(rdm_lido, transformer, name):
    number = {"lido-1.0": "1", "lido-1.1": "2"}[name]
    data = transformer.transform(harvested(DOCUMENTS[name]))
    assert transformer.last_warnings == [
        "actor 'Heda, Willem Claesz.': no creator role 'painter'; kept without it.",
        "subject 'still lifes': conceptID 'http://vocab.getty.edu/aat/300015638' is not in the "
        "subjects vocabulary; kept as text.",
        "recordRights 'cc0-1.0': RDM has no rights of the metadata record; kept among the "
        "record's rights.",
        f"resource 'https://images.museum.example.org/{number}.jpg': rights 'CC BY-SA 4.0' not "
        "kept (RDM's related identifiers have no rights).",
    ]

    record = publish(rdm_lido, data)

    metadata = record["metadata"]
    assert metadata["title"] == "Still life with a lobster"
    assert [
        (t["title"], t["type"]["id"], t.get("lang", {}).get("id"))
        for t in metadata["additional_titles"]
    ] == [("Stilleven met kreeft", "translated-title", "nld")]
    creator = metadata["creators"][0]["person_or_org"]
    assert (creator["type"], creator["family_name"], creator["given_name"]) == (
        "personal",
        "Heda",
        "Willem Claesz.",
    )
    assert creator["identifiers"] == [{"scheme": "gnd", "identifier": GND_HEDA}]
    assert len(metadata["creators"]) == 1
    assert [
        (c["person_or_org"]["type"], c["person_or_org"]["name"], c["role"]["id"])
        for c in metadata["contributors"]
    ] == [
        ("organizational", "Guild of St Luke", "sponsor"),
        ("organizational", "Example Museum", "rightsholder"),
    ]
    assert metadata["publication_date"] == "1643/1645"
    assert [(d["date"], d["type"]["id"], d["description"]) for d in metadata["dates"]] == [
        ("1901-05-02", "other", "Acquisition"),
        ("1899", "collected", "Finding"),
    ]
    assert metadata["resource_type"]["id"] == "image"  # painting
    assert [s["subject"] for s in metadata["subjects"]] == [
        "painting",
        "still life",
        "Dutch Golden Age",
        "still lifes",
        "lobster",
    ]
    assert metadata["description"] == "A lobster, a silver jug and a lemon on a table."
    assert [
        (d["description"], d["type"]["id"], d.get("lang", {}).get("id"))
        for d in metadata["additional_descriptions"]
    ] == [
        ("Materials and techniques: oil on panel", "technical-info", "eng"),
        ("Measurements: 64 x 80 cm", "technical-info", "eng"),
    ]
    haarlem, amsterdam, sea = metadata["locations"]["features"]
    assert haarlem == {
        "place": "Haarlem",
        "description": "Production place",
        "geometry": {"type": "Point", "coordinates": [4.64, 52.38]},
        "identifiers": [{"scheme": "geonames", "identifier": "2755003"}],
    }
    assert amsterdam == {"place": "Amsterdam", "description": "Acquisition place"}
    assert sea["place"] == "North Sea" and sea["description"] == "subject place"
    assert sea["geometry"]["type"] == "Polygon"
    assert metadata["identifiers"] == [
        {"identifier": f"DE-MUS-1/{number}", "scheme": "other"},
        {"identifier": f"INV {number}", "scheme": "other"},
        {"identifier": f"https://museum.example.org/objects/{number}", "scheme": "url"},
    ]
    assert [r["id"] for r in metadata["rights"]] == ["cc-pdm-1.0", "cc0-1.0"]
    assert metadata["copyright"] == "Example Museum, gift of J. Doe"
    assert metadata["publisher"] == "Example Museum"
    assert [
        (r["identifier"], r["scheme"], r["relation_type"]["id"], r["resource_type"]["id"])
        for r in metadata["related_identifiers"]
    ] == [
        (f"https://images.museum.example.org/{number}.jpg", "url", "isdocumentedby", "image"),
        (f"https://images.museum.example.org/{number}-back.tif", "url", "isdocumentedby", "image"),
    ]
    assert record["access"] == {**record["access"], "record": "public", "files": "public"}


def test_a_further_language_adds_its_titles_and_descriptions(rdm_lido, transformer):
    data = transformer.transform(harvested(DOCUMENTS["bilingual"]))
    metadata = publish(rdm_lido, data)["metadata"]
    assert metadata["title"] == "Still life with a lobster"
    assert [
        (t["title"], t["type"]["id"], t.get("lang", {}).get("id"))
        for t in metadata["additional_titles"]
    ] == [
        ("Stilleven met kreeft", "translated-title", "nld"),
        ("Stillleben mit Hummer", "translated-title", "deu"),
    ]
    assert [
        (d["description"], d["type"]["id"], d.get("lang", {}).get("id"))
        for d in metadata["additional_descriptions"]
    ][0] == ("Ein Hummer, eine Silberkanne und eine Zitrone.", "other", "deu")


def test_unmappable_values_are_warnings_on_a_valid_record(rdm_lido, transformer):
    data = transformer.transform(harvested(DOCUMENTS["unmappable"]))
    assert transformer.last_warnings == [
        "actor 'Rembrandt van Rijn': actorID 'http://vocab.getty.edu/ulan/500011051' (ulan) is "
        "not an identifier RDM takes for people; dropped.",
        "actor 'Rembrandt van Rijn': actorID 'http://viaf.org/viaf/64013650' (viaf) is not an "
        "identifier RDM takes for people; dropped.",
        "actor 'Rembrandt van Rijn': no creator role 'inventor of the design'; kept without it.",
        "event 'Acquisition': actor 'Doe, Jane' (seller): RDM keeps the actors of the production "
        "event only; dropped.",
        "event 'Production': date '17th century' kept as '1600/1699' (RDM takes no approximate "
        "dates).",
        "subject 'still lifes': conceptID 'http://vocab.getty.edu/aat/300015638' is not in the "
        "subjects vocabulary; kept as text.",
        "place 'Atlantis': gml '95 200' is not valid coordinates; dropped.",
        "place 'Atlantis': placeID 'http://vocab.getty.edu/tgn/7000000' is not a scheme RDM "
        "takes; dropped.",
        "recordRights 'cc0-1.0': RDM has no rights of the metadata record; kept among the "
        "record's rights.",
        "resource 'images/flyer.jpg': not a URL; dropped.",
        "<eventMethod>: no RDM field is mapped; dropped.",
    ]
    metadata = publish(rdm_lido, data)["metadata"]
    assert metadata["creators"][0]["person_or_org"]["family_name"] == "Rembrandt van Rijn"
    assert "identifiers" not in metadata["creators"][0]["person_or_org"]
    assert metadata["contributors"][0]["role"]["id"] == "producer"  # printer
    assert metadata["publication_date"] == "1600/1699"
    assert metadata["resource_type"]["id"] == "physicalobject"  # category E22
    assert metadata["locations"]["features"][0] == {
        "place": "Atlantis",
        "description": "Production place",
    }
    assert "related_identifiers" not in metadata


def test_the_default_resource_type_by_key_and_by_option(rdm_lido, app, monkeypatch):
    untyped = DOCUMENTS["lido-1.1"].replace("E22", "E73").replace("painting", "Flugblatt")
    untyped = untyped.replace(
        "still life</lido:term></lido:classification>", "x</lido:term></lido:classification>"
    )
    transformer = LIDORDMTransformer()
    assert transformer.transform(harvested(untyped))["metadata"]["resource_type"]["id"] == (
        "physicalobject"
    )
    assert (
        "objectWorkType 'Flugblatt', 'x': no matching resource type; using the default "
        "'physicalobject'."
    ) in transformer.last_warnings
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RDM_LIDO_DEFAULT_RESOURCE_TYPE", "other")
    assert LIDORDMTransformer().transform(harvested(untyped))["metadata"]["resource_type"] == {
        "id": "other"
    }
    optioned = LIDORDMTransformer(default_resource_type="dataset", resource_types={"x": "image"})
    assert optioned.transform(harvested(untyped))["metadata"]["resource_type"] == {"id": "image"}
    assert optioned.default_resource_type == "dataset"


def test_an_undated_record_gets_the_year_of_its_datestamp_or_fails(rdm_lido, app, monkeypatch):
    record = harvested(DOCUMENTS["undated"], datestamp="2017-03-21T09:00:00Z")
    transformer = LIDORDMTransformer()
    data = transformer.transform(record)
    assert data["metadata"]["publication_date"] == "2017"
    assert (
        "Publication date: no EDTF level 0 date in production event date ('undated'); using "
        "2017, the year of the record's datestamp 2017-03-21T09:00:00Z."
    ) in transformer.last_warnings
    assert publish(rdm_lido, data)["metadata"]["publication_date"] == "2017"
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RDM_MISSING_DATE", "fail")
    with pytest.raises(TransformError, match="no production or creation event with an EDTF date"):
        LIDORDMTransformer().transform(record)


def test_a_record_without_a_title_is_a_transform_error(rdm_lido, transformer):
    untitled = (
        DOCUMENTS["lido-1.0"]
        .replace("Still life with a lobster", "")
        .replace("Stilleven met kreeft", "")
    )
    with pytest.raises(TransformError, match="no title of at least 3 characters"):
        transformer.transform(harvested(untitled))


def test_a_record_without_a_maker_publishes_with_its_holder_as_creator(rdm_lido, transformer):
    """lido_rdm's default missing_creator is ``holder``; the acquisition's actor is not a
    maker and stays out; ``fail`` is the old behaviour."""
    makerless = lido_document(
        "9",
        events=(
            _lido_event(
                "Acquisition", ("1901", "1901"), actors=(("Doe, John", "person", "seller", ()),)
            ),
        ),
    )

    data = transformer.transform(harvested(makerless))
    record = publish(rdm_lido, data)

    assert [c["person_or_org"] for c in record["metadata"]["creators"]] == [
        {"type": "organizational", "name": "Example Museum"}
    ]
    assert (
        "Creators: no actor of a production or creation event in a maker's role; using its "
        "holder or publisher as creators ('Example Museum'; missing_creator holder)."
    ) in transformer.last_warnings
    with pytest.raises(TransformError, match="no actor of a production or creation event"):
        LIDORDMTransformer(missing_creator="fail").transform(harvested(makerless))


def test_a_production_event_without_a_maker_has_its_producer_as_creator(rdm_lido):
    """A technical object "made" by its producer only (a maker's role would be a creator,
    a producer's is a contributor's): the producer stands in before the holder."""
    produced = lido_document(
        "10",
        events=(
            _lido_event("Production", ("1791", "1791"), actors=(("Anonim", "", "producer", ()),)),
        ),
    )
    transformer = LIDORDMTransformer()

    record = publish(rdm_lido, transformer.transform(harvested(produced)))

    assert [c["person_or_org"]["name"] for c in record["metadata"]["creators"]] == ["Anonim"]
    assert [c["person_or_org"]["name"] for c in record["metadata"]["contributors"]][0] == "Anonim"
    assert (
        "Creators: no actor of a production or creation event in a maker's role; using those "
        "who made it in another role as creators ('Anonim'; missing_creator holder)."
    ) in transformer.last_warnings


# -- harvested through OAI-PMH from the bundled provider --------------------------------------
@pytest.fixture()
def museum(rdm_lido):
    corpus = lido_corpus()
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    with OAIPMHProvider(corpus, page_size=2, metadata_prefixes=("oai_dc", "lido")) as running:
        yield running


def test_harvest_of_the_lido_prefix_publishes_every_museum_object(rdm_lido, museum):
    make_harvester(
        museum.base_url, target=RDM_TARGET, transformer=TRANSFORMER, metadata_prefix="lido"
    )

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (5, 0)
    rows = tracking()
    assert {row.oai_identifier.rsplit(":", 1)[-1] for row in rows.values()} == set(DOCUMENTS)
    for name, document in DOCUMENTS.items():
        row = rows[f"oai:museum.example.org:{name}"]
        transformer = LIDORDMTransformer()
        expected = transformer.transform(
            harvested(document, identifier=row.oai_identifier, datestamp=row_datestamp(row))
        )
        assert not row.errors
        assert row.warnings == (transformer.last_warnings or None)
        published = rdm_lido.read(system_identity, row.local_pid).to_dict()["metadata"]
        # The writer adds the provenance link (a related identifier `isderivedfrom`, last).
        *related, source_link = published["related_identifiers"]
        assert source_link["relation_type"]["id"] == "isderivedfrom", source_link
        published["related_identifiers"] = related
        for field in set(expected["metadata"]):
            assert holds(published[field], expected["metadata"][field]), (
                field,
                published[field],
                expected["metadata"][field],
            )


def row_datestamp(row: Any) -> str:
    value = row.datestamp
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if hasattr(value, "strftime") else str(value)


def holds(published: Any, expected: Any) -> bool:
    """Whether the published value holds every value the transformer gave (RDM adds the
    titles of vocabulary entries and a person's full name)."""
    if isinstance(expected, dict):
        return isinstance(published, dict) and all(
            key in published and holds(published[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(published, list)
            and len(published) == len(expected)
            and all(holds(p, e) for p, e in zip(published, expected, strict=True))
        )
    return published == expected


def test_a_5_mb_lido_record_is_harvested_with_bounded_memory(rdm_lido):
    """Hundreds of events and resources in one ~5 MB record (under max_record_bytes): the
    harvest's peak Python allocation and RSS growth stay within a few times its size."""
    import threading
    import tracemalloc

    from oarepo_oaipmh_harvester.testing.corpus import Corpus, large_lido_document

    document = large_lido_document(5_000_000)
    size = len(document.encode())
    corpus = Corpus()
    corpus.add("oai:museum.example.org:large", {"title": ["large"], "lido": [document]})
    page = 4096

    def rss() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * page

    peak_rss, stop = [rss()], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak_rss[0] = max(peak_rss[0], rss())
            stop.wait(0.01)

    with OAIPMHProvider(corpus, metadata_prefixes=("lido",)) as provider:
        make_harvester(
            provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, metadata_prefix="lido"
        )
        before = rss()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        tracemalloc.start()
        try:
            summary = run_harvest("test")
            _, python_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            stop.set()
            sampler.join()
    growth = peak_rss[0] - before
    print(
        f"\nLIDO record {size} bytes: Python peak {python_peak / size:.1f}x "
        f"({python_peak} bytes), RSS growth {growth / size:.1f}x ({growth} bytes)"
    )
    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    row = tracking()["oai:museum.example.org:large"]
    assert not row.errors and len(row.warnings) > 300
    assert python_peak < 40 * size
    assert growth < 40 * size
