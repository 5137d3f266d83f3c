"""The ``marcxml_rdm`` transformer (MARC 21 bibliographic records) against the real RDM records
service, and harvested through OAI-PMH from the bundled provider's ``marcxml`` prefix."""

from __future__ import annotations

import configparser
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from lxml import etree

from oarepo_oaipmh_harvester.testing.corpus_marc import (
    BOOK,
    marcxml_corpus,
    marcxml_document,
)
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider, served_document_key
from oarepo_oaipmh_harvester.transformers import FileReference, TransformError
from oarepo_oaipmh_harvester.transformers.rdm.marcxml import MARCXMLRDMTransformer
from oarepo_oaipmh_harvester.transformers.rdm.marcxml_read import clean, marc_record

from .conftest import RDM_TARGET
from .helpers import tracking
from .test_datacite_to_rdm import harvested
from .test_dc_to_rdm import publish
from .test_lido_to_rdm import holds, row_datestamp

TRANSFORMER = "marcxml_rdm"
ROOT = Path(__file__).resolve().parents[2]
EXTRA_VOCABULARIES = {
    "relationtypes": ("rlt", "relation_types.yaml", ("isvariantformof", "ispublishedin")),
    "contributorsroles": ("cor", "roles.yaml", ("sponsor", "producer", "rightsholder")),
    "resourcetypes": ("rsrct", "resource_types.yaml", ("physicalobject", "video", "audio")),
}


# -- no application --------------------------------------------------------------------------
def test_setup_cfg_declares_the_entry_point_and_the_prefixes_are_configured():
    from oarepo_oaipmh_harvester import config as harvester_config

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    declared = config["options.entry_points"]["oarepo_oaipmh_harvester.transformers"]
    assert (
        "marcxml_rdm = oarepo_oaipmh_harvester.transformers.rdm.marcxml:MARCXMLRDMTransformer"
        in declared.splitlines()
    )
    transformers = harvester_config.OAI_HARVESTER_RDM_TRANSFORMERS
    assert transformers["marcxml"] == transformers["marc21"] == TRANSFORMER


def test_isbd_punctuation_is_cut_from_values():
    assert clean("Traffic :") == "Traffic"
    assert clean("why we drive the way we do /") == "why we drive the way we do"
    assert clean("Vanderbilt, Tom.") == "Vanderbilt, Tom"
    assert clean("Fecko, M.") == "Fecko, M."
    assert clean("Washington, D.C. :") == "Washington, D.C."
    assert clean("2008.") == "2008"
    assert clean("[1985]") == "1985"
    assert clean("Alfred A. Knopf,") == "Alfred A. Knopf"
    assert clean("Lattices ;  , :") == "Lattices"


def test_a_value_ending_in_thousands_of_marks_is_cleaned_at_once():
    """One anchored pass: a loop of one mark a pass took 14 s on 20,000 commas."""
    started = time.perf_counter()
    assert clean("Lattices" + ", " * 20_000) == "Lattices"
    assert time.perf_counter() - started < 1.0


def test_the_marc_record_is_found_bare_or_in_a_collection_in_any_namespace():
    for document in (
        marcxml_document(BOOK),
        marcxml_document(BOOK, collection=False),
        marcxml_document(BOOK, prefix=""),
    ):
        marc = marc_record(etree.fromstring(document), "x")
        assert marc.leader.startswith("00000nam")
        assert [f.tag for f in marc.get("245")] == ["245"]
        assert marc.control("003") == "DE-101"
    with pytest.raises(TransformError, match="holds no MARCXML record"):
        marc_record(etree.fromstring("<dc xmlns='http://example.org/'/>"), "x")
    with pytest.raises(TransformError, match="has no metadata"):
        marc_record(None, "oai:x:1")


# -- against the RDM app ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def app_config(app_config):
    """External DOIs on (a library's DOI becomes pids.doi); the transformer registered by
    configuration too (the venv's entry points may be another worktree's)."""
    from oaiharvest_test_support.rdm import rdm_config

    app_config["RDM_PERSISTENT_IDENTIFIERS"] = rdm_config(external_dois=True)[
        "RDM_PERSISTENT_IDENTIFIERS"
    ]
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: MARCXMLRDMTransformer,
    }
    return app_config


@pytest.fixture(scope="module")
def marc_vocabularies(rdm_vocabularies):
    from oaiharvest_test_support.rdm import load_vocabularies

    load_vocabularies(EXTRA_VOCABULARIES)


@pytest.fixture()
def rdm_marc(rdm, marc_vocabularies):
    return rdm


@pytest.fixture()
def transformer(rdm_marc) -> MARCXMLRDMTransformer:
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    return current_oai_harvester.transformers.get(TRANSFORMER)


def documents() -> dict[str, str]:
    return {
        record.identifier.rsplit(":", 1)[-1]: record.metadata[served_document_key("marcxml")][0]
        for record in marcxml_corpus().select()
    }


DOCUMENTS = documents()


def library(name: str, **kwargs):
    return harvested(DOCUMENTS[name], identifier=f"oai:library.example.org:{name}", **kwargs)


def test_a_catalogued_book_is_published_with_every_value(rdm_marc, transformer):
    data = transformer.transform(library("book"))
    assert transformer.last_warnings == [
        "Subjects of scheme 'lcsh': kept as free text (RDM's free subjects have no scheme).",
        "Subjects of scheme 'gnd': kept as free text (RDM's free subjects have no scheme).",
        "773 'Journal of Lattices': the site has no journal:journal custom field; kept its "
        "ISSN as a related identifier (ispublishedin) (title 'Journal of Lattices', issn "
        "'1234-5679', volume '5', issue '2', pages '33-45').",
        "856 $y 'Full text': a link's text has no RDM field; dropped.",
        "856 $3 'TOC': a link's text has no RDM field; dropped.",
        "020 $q: no RDM field is mapped; dropped.",
        "245 $c: no RDM field is mapped; dropped.",
    ]
    # The resource (second indicator 0) is a file; the table of contents (2) a link only.
    assert transformer.last_files == [
        FileReference(
            url="https://library.example.org/books/990012345.pdf",
            name="990012345.pdf",
            mimetype="application/pdf",
        )
    ]

    record = publish(rdm_marc, data)

    metadata = record["metadata"]
    assert record["pids"]["doi"] == {"identifier": "10.1234/marc.book.2021", "provider": "external"}
    assert metadata["title"] == "Spectral lattice models: a primer"
    assert [(t["title"], t["type"]["id"]) for t in metadata["additional_titles"]] == [
        ("Spektrale Gittermodelle", "translated-title"),
        ("Lattice models", "alternative-title"),
        ("Спектральные модели решёток", "alternative-title"),
    ]
    assert [
        (c["person_or_org"]["name"], c["person_or_org"].get("identifiers"), c.get("affiliations"))
        for c in metadata["creators"]
    ] == [
        (
            "Novák, Jan",
            [{"scheme": "orcid", "identifier": "0000-0002-1825-0097"}],
            [{"name": "Charles University"}],
        ),
        ("Svobodová, Petra", None, None),
    ]
    assert [
        (c["person_or_org"]["type"], c["person_or_org"]["name"], c["role"]["id"])
        for c in metadata["contributors"]
    ] == [
        ("personal", "Müller, Anna", "editor"),
        ("organizational", "CERN. Theory Department", "hostinginstitution"),
        ("organizational", "Lattice Conference", "other"),
    ]
    assert metadata["contributors"][0]["person_or_org"]["identifiers"] == [
        {"scheme": "gnd", "identifier": "gnd:118547739"}
    ]
    assert metadata["publisher"] == "Example Press"
    assert metadata["publication_date"] == "2021"
    assert metadata["copyright"] == "©2020"
    assert metadata["resource_type"]["id"] == "publication-book"
    assert [language["id"] for language in metadata["languages"]] == ["deu", "eng"]
    assert metadata["description"] == "A primer on spectral lattice models &amp; their uses."
    assert [(d["description"], d["type"]["id"]) for d in metadata["additional_descriptions"]] == [
        ("Includes an index.", "other"),
        ("Lattices -- Spectra -- Models.", "table-of-contents"),
        ("Lecture notes in lattices; 7", "series-information"),
    ]
    assert [s["subject"] for s in metadata["subjects"]] == [
        "Lattice theory -- Spectra",
        "Quasikristall",
        "lattice models",
        "Local physics",
    ]
    assert metadata["version"] == "2nd edition"
    assert metadata["sizes"] == ["xii, 214 pages; 24 cm"]
    assert [(i["scheme"], i["identifier"]) for i in metadata["identifiers"]] == [
        ("isbn", "978-3-16-148410-0"),
        ("issn", "0378-5955"),
        ("urn", "urn:nbn:de:101-2021"),
        ("other", "(OCoLC)123456789"),
        ("other", "(DE-101)990012345"),
    ]
    assert [r["id"] for r in metadata["rights"]] == ["cc-by-4.0"]
    assert [
        (r["scheme"], r["identifier"], r["relation_type"]["id"])
        for r in metadata["related_identifiers"]
    ] == [
        ("issn", "1234-5679", "ispublishedin"),
        ("url", "https://library.example.org/books/990012345.pdf", "isvariantformof"),
        ("url", "https://library.example.org/books/990012345/toc", "references"),
    ]
    assert [(f["funder"]["name"], f["award"]["number"]) for f in metadata["funding"]] == [
        ("Czech Science Foundation", "GA21-12345S")
    ]
    assert record["access"]["files"] == "public"


def test_a_record_as_invenio_rdm_serializes_it(rdm_marc, transformer):
    """The tags and codes of InvenioRDM's own MARCXML serializer: 024 $2 doi, 100/700 with
    $0 (orcid) and $u, 520 with escaped HTML, 520 _1/_2 formats and sizes, 540 access term
    and license, 542 $l, 650 17 license id, 773 $a/$i/$n, 8564 file with size and checksum,
    909CO, 980 eu-repo and marc21 type, 999C5 references."""
    data = transformer.transform(library("article"))
    assert transformer.last_warnings == [
        "001 'abcde-12345': a control number without 003 (whose number it is); dropped.",
        "909CO $p 'user-photos': the source's community; not kept.",
    ]
    assert transformer.last_files == [
        FileReference(
            url="https://zenodo.example.org/records/12345/files/bridge.tif",
            name="bridge.tif",
            size=123456,
            checksum="md5:0123456789abcdef0123456789abcdef",
        )
    ]

    record = publish(rdm_marc, data)

    metadata = record["metadata"]
    assert record["pids"]["doi"]["identifier"] == "10.1234/marc.article.2022"
    assert [
        (c["person_or_org"]["type"], c["person_or_org"]["name"]) for c in metadata["creators"]
    ] == [("personal", "Nováková, Eva"), ("organizational", "CERN")]
    assert [(c["person_or_org"]["name"], c["role"]["id"]) for c in metadata["contributors"]] == [
        ("Doe, John", "editor")
    ]
    assert metadata["publisher"] == "Zenodo"
    assert metadata["publication_date"] == "2022-06-21"
    assert metadata["resource_type"]["id"] == "image-photo"
    assert metadata["description"] == "<p>Photographs of <b>the bridge</b>.</p>"
    assert metadata["formats"] == ["image/tiff"] and metadata["sizes"] == ["3 photographs"]
    assert [r["id"] for r in metadata["rights"]] == ["cc0-1.0"]
    assert [s["subject"] for s in metadata["subjects"]] == ["Prague", "bridges"]
    assert metadata["identifiers"] == [
        {"identifier": "oai:zenodo.example.org:12345", "scheme": "other"}
    ]
    assert [
        (r["scheme"], r["identifier"], r["relation_type"]["id"])
        for r in metadata["related_identifiers"]
    ] == [
        ("doi", "10.5555/photos.1", "ispartof"),
        ("url", "https://zenodo.example.org/records/12345/files/bridge.tif", "haspart"),
    ]
    assert metadata["references"] == [{"reference": "Doe, J. (2020). Bridges. Prague."}]
    assert record["access"]["files"] == "public"


def test_unmappable_values_are_warnings_on_a_valid_record(rdm_marc, transformer):
    data = transformer.transform(library("unmappable"))
    assert transformer.last_warnings == [
        "246 'Un': shorter than 3 characters; dropped.",
        "264 'Print Works': not a publication; dropped.",
        "260/264 $c 'circa the twenties': not a date RDM takes; dropped.",
        "100 'Roe, Richard': identifier 'http://viaf.org/viaf/42' (viaf) is not one RDM takes "
        "for people; dropped.",
        "Resource type: leader/06-07 'zm', 980 none: no matching resource type; using the "
        "default 'publication'.",
        "Language 'xyz' is not in the languages vocabulary; dropped.",
        "001 'u-1': a control number without 003 (whose number it is); dropped.",
        "909CO $p 'user-elsewhere': the source's community; not kept.",
        "773 'Annals of Nothing': the site has no journal:journal custom field; dropped (title "
        "'Annals of Nothing', volume '3').",
        "856 $u 'images/scan.jpg': not a URL; dropped.",
        "502 $c 'Example University': the site has no thesis:thesis custom field; dropped.",
        "040: no RDM field is mapped; dropped.",
        "082: no RDM field is mapped; dropped.",
        "100 $d: no RDM field is mapped; dropped.",
        "245 $c: no RDM field is mapped; dropped.",
        "502 $a: no RDM field is mapped; dropped.",
        "880 linked to 100: no RDM field is mapped; dropped.",
        "909C4: no RDM field is mapped; dropped.",
        "995: no RDM field is mapped; dropped.",
    ]
    metadata = publish(rdm_marc, data)["metadata"]
    assert metadata["title"] == "Of things unmapped"
    assert metadata["publication_date"] == "2020"  # 008/07-10
    assert metadata["resource_type"]["id"] == "publication"
    assert "identifiers" not in metadata["creators"][0]["person_or_org"]


def test_a_restricted_serial_of_an_organisation(rdm_marc, transformer):
    data = transformer.transform(library("untyped"))
    record = publish(rdm_marc, data)
    metadata = record["metadata"]
    assert metadata["creators"][0]["person_or_org"] == {
        "type": "organizational",
        "name": "Deutsche Gesellschaft für Gitter",
    }
    assert metadata["publication_date"] == "1954"  # "[195-?]" is no date; 008/07-10 is
    assert metadata["resource_type"]["id"] == "publication-journal"  # leader "as"
    assert metadata["rights"] == [{"title": {"en": "All rights reserved."}}]
    assert record["access"]["files"] == "restricted"
    assert "506 'Available to members only': files restricted; the terms are not kept." in (
        transformer.last_warnings
    )


def test_an_undated_record_without_author_uses_the_policies(rdm_marc, app, monkeypatch):
    record = library("undated", datestamp="2017-03-21T09:00:00Z")
    transformer = MARCXMLRDMTransformer()
    data = transformer.transform(record)
    assert data["metadata"]["publication_date"] == "2017"
    assert [
        c["person_or_org"]["name"] for c in publish(rdm_marc, data)["metadata"]["creators"]
    ] == ["Doe, Jane"]
    assert transformer.last_warnings == [
        "Publication date: no 260/264 $c, 269 $c or 008/07-10; using 2017, the year of the "
        "record's datestamp 2017-03-21T09:00:00Z.",
        "700 'Doe, Jane': relator 'ill' has no contributor role here; using 'other'.",
        "Creators: no 100, 110, 111 or author's 7XX; using its contributors as creators "
        "('Doe, Jane'; missing_creator contributors).",
        "Resource type: leader/06-07 '  ', 980 none: no matching resource type; using the "
        "default 'publication'.",
    ]
    optioned = MARCXMLRDMTransformer(default_resource_type="dataset")
    assert optioned.transform(library("undated"))["metadata"]["resource_type"] == {"id": "dataset"}
    with pytest.raises(TransformError, match="names no creator"):
        MARCXMLRDMTransformer(missing_creator="fail").transform(record)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RDM_MISSING_DATE", "fail")
    with pytest.raises(TransformError, match="has no publication date RDM takes"):
        MARCXMLRDMTransformer().transform(record)


def test_a_record_without_a_title_is_a_transform_error(rdm_marc, transformer):
    untitled = marcxml_document([f for f in BOOK if f[0] != "245"])
    with pytest.raises(TransformError, match="no title of at least 3 characters in 245"):
        transformer.transform(harvested(untitled))


def test_a_site_with_journal_and_thesis_custom_fields_gets_them(rdm_marc, app, monkeypatch):
    """RDM's contrib custom fields (journal, thesis) where the site configures them: 773
    goes into ``journal:journal`` instead of a related ISSN, 502 into ``thesis:thesis``."""
    from invenio_rdm_records.contrib.journal import JOURNAL_CUSTOM_FIELDS
    from invenio_rdm_records.contrib.thesis import THESIS_CUSTOM_FIELDS

    monkeypatch.setitem(
        app.config, "RDM_CUSTOM_FIELDS", JOURNAL_CUSTOM_FIELDS + THESIS_CUSTOM_FIELDS
    )
    transformer = MARCXMLRDMTransformer()

    book = transformer.transform(library("book"))
    assert book["custom_fields"] == {
        "journal:journal": {
            "title": "Journal of Lattices",
            "issn": "1234-5679",
            "volume": "5",
            "issue": "2",
            "pages": "33-45",
        }
    }
    assert not any(w.startswith("773") for w in transformer.last_warnings)
    assert all(r["scheme"] != "issn" for r in book["metadata"]["related_identifiers"])
    thesis = transformer.transform(library("unmappable"))
    assert thesis["custom_fields"] == {
        "journal:journal": {"title": "Annals of Nothing", "volume": "3"},
        "thesis:thesis": {"university": "Example University"},
    }


# -- harvested through OAI-PMH from the bundled provider --------------------------------------
@pytest.fixture()
def library_provider(rdm_marc):
    corpus = marcxml_corpus()
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    with OAIPMHProvider(corpus, page_size=2, metadata_prefixes=("oai_dc", "marcxml")) as running:
        yield running


def test_harvest_of_the_marcxml_prefix_publishes_every_record(rdm_marc, library_provider):
    make_harvester(
        library_provider.base_url,
        target=RDM_TARGET,
        transformer=TRANSFORMER,
        metadata_prefix="marcxml",
    )

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (len(DOCUMENTS), 0)
    rows = tracking()
    assert {row.oai_identifier.rsplit(":", 1)[-1] for row in rows.values()} == set(DOCUMENTS)
    for name, document in DOCUMENTS.items():
        row = rows[f"oai:library.example.org:{name}"]
        transformer = MARCXMLRDMTransformer()
        expected = transformer.transform(
            harvested(document, identifier=row.oai_identifier, datestamp=row_datestamp(row))
        )
        assert not row.errors
        assert row.warnings == (transformer.last_warnings or None)
        published = rdm_marc.read(system_identity, row.local_pid).to_dict()
        metadata = published["metadata"]
        # The writer adds the provenance link (a related identifier `isderivedfrom`, last).
        *related, source_link = metadata["related_identifiers"]
        assert source_link["relation_type"]["id"] == "isderivedfrom", source_link
        metadata["related_identifiers"] = related
        if not related:
            del metadata["related_identifiers"]
        assert set(expected["metadata"]) == set(metadata) - {"publication_date_range"}, name
        for field in expected["metadata"]:
            assert holds(metadata[field], expected["metadata"][field]), (
                name,
                field,
                metadata[field],
                expected["metadata"][field],
            )
        assert holds(published["access"], expected["access"])
        assert published["pids"].get("doi") == expected.get("pids", {}).get("doi")


# -- a large record ---------------------------------------------------------------------------
def large_marcxml_document(target_bytes: int) -> str:
    """A record of thousands of fields: authors, subjects, notes and links, ~`target_bytes`."""
    head = [f for f in BOOK if f[0] in ("001", "003", "008", "100", "245", "264")]
    unit = [
        ("700", "1 ", [("a", "Author, Number{n}"), ("u", "Institute {n}")]),
        ("650", " 0", [("a", "Subject {n}"), ("x", "Subdivision {n}")]),
        ("500", "  ", [("a", "Note {n}: " + "lorem ipsum dolor sit amet " * 6)]),
        ("856", "40", [("u", "https://library.example.org/files/{n}.pdf")]),
        ("035", "  ", [("a", "(LOCAL){n}")]),
        ("595", "  ", [("a", "Local field {n}")]),
    ]
    unit_bytes = len(marcxml_document(unit)) - len(marcxml_document([]))
    count = max(1, (target_bytes - len(marcxml_document(head))) // unit_bytes)
    fields = list(head)
    for n in range(count):
        fields += [
            (tag, ind, [(code, value.format(n=n)) for code, value in subs])
            for tag, ind, subs in unit
        ]
    return marcxml_document(fields)


def test_a_5_mb_marcxml_record_is_transformed_with_bounded_memory(rdm_marc):
    document = large_marcxml_document(5_000_000)
    size = len(document.encode())
    record = harvested(document)
    transformer = MARCXMLRDMTransformer()
    started = time.perf_counter()
    transformer.transform(record)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    try:
        data = transformer.transform(record)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    fields = sum(1 for _ in record.metadata.iter("{*}datafield"))
    print(
        f"\nMARCXML record {size} bytes, {fields} fields: transformed in {seconds:.2f} s, "
        f"Python peak {peak / size:.1f}x ({peak} bytes)"
    )
    assert len(data["metadata"]["creators"]) > 1000
    assert "595 (" in " ".join(transformer.last_warnings)
    assert peak < 20 * size
    # Linear work: 1.2-2 s here; a quadratic rule (the first version's de-duplication) took 14.
    assert seconds < 10, seconds


# -- review findings: values a catalogue writes every day ----------------------------------
def minimal(*fields, leader: str = "00000nam a2200000 a 4500"):
    base = [("001", "r1"), ("100", "1 ", [("a", "Novák, Jan")]), ("245", "10", [("a", "Lattices")])]
    return harvested(
        marcxml_document([*base, *fields], leader=leader, collection=False),
        identifier="oai:library.example.org:r1",
    )


@pytest.mark.parametrize(
    ("published", "expected"),
    [("2019, c2020.", "2019"), ("[2019], ©2020", "2019"), ("1995 [i.e. 1996]", "1995")],
)
def test_the_publication_year_comes_before_a_copyright_or_corrected_year(
    rdm_marc, transformer, published, expected
):
    data = transformer.transform(
        minimal(("264", " 1", [("b", "Example Press,"), ("c", published)]))
    )
    assert data["metadata"]["publication_date"] == expected


def test_a_short_008_is_no_date_and_the_record_still_publishes(rdm_marc, transformer):
    data = transformer.transform(minimal(("008", "850101s199"), ("260", "  ", [("c", "[199-?]")])))
    assert data["metadata"]["publication_date"] != "199"
    publish(rdm_marc, data)


def test_an_open_506_never_opens_files_an_earlier_rule_restricted(rdm_marc, transformer):
    data = transformer.transform(
        minimal(
            ("540", "  ", [("a", "info:eu-repo/semantics/embargoedAccess")]),
            ("506", "0 ", [("a", "Open access.")]),
        )
    )
    assert data["access"]["files"] == "restricted"
    publish(rdm_marc, data)


def test_the_host_items_full_title_wins_and_its_other_subfields_are_warnings(rdm_marc, transformer):
    data = transformer.transform(
        minimal(
            (
                "773",
                "0 ",
                [("a", "Host"), ("t", "Journal of Foo"), ("p", "J. Foo"), ("w", "(DE-600)123")],
            )
        )
    )
    journal = data.get("custom_fields", {}).get("journal:journal")
    warnings = " ".join(transformer.last_warnings)
    if journal is not None:
        assert journal["title"] == "Journal of Foo"
    assert "$a 'Host'" in warnings and "$w '(DE-600)123'" in warnings
    assert "$p 'J. Foo' (the abbreviated title)" in warnings


def test_each_uncontrolled_keyword_is_a_subject_of_its_own(rdm_marc, transformer):
    data = transformer.transform(minimal(("653", "  ", [("a", "lattice"), ("a", "spectra")])))
    assert data["metadata"]["subjects"] == [{"subject": "lattice"}, {"subject": "spectra"}]


def test_every_licence_text_and_unread_subfield_is_kept_or_warned(rdm_marc, transformer):
    data = transformer.transform(
        minimal(
            ("540", "  ", [("a", "Terms of the archive."), ("a", "No reuse."), ("b", "Archive")]),
            ("020", "  ", [("a", "9783161484100"), ("q", "paperback")]),
        )
    )
    assert {"title": {"en": "Terms of the archive. No reuse."}} in data["metadata"]["rights"]
    warnings = " ".join(transformer.last_warnings)
    assert "540 $b" in warnings and "020 $q" in warnings
