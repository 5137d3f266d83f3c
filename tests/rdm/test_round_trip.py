"""Round trip RDM -> invenio-oaiserver -> RDM: records published in a real InvenioRDM source,
served by its OAI-PMH server, harvested into the test app's RDM records service.

One :class:`RoundTrip` per metadata format: its prefix, its transformer, the fields that must
come back equal and the fields it is known to lose (both measured here; the losses are listed
in the README). Another format is one more entry of ``ROUND_TRIPS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest, wait_until
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_rdm_records.services.errors import RecordDeletedException

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.transformers.rdm.datacite import DataCiteRDMTransformer
from oarepo_oaipmh_harvester.transformers.rdm.dublin_core import DublinCoreRDMTransformer
from oarepo_oaipmh_harvester.transformers.rdm.marcxml import MARCXMLRDMTransformer

from .conftest import RDM_TARGET
from .oaiserver_source import OAIServerSource


@pytest.fixture(scope="module")
def app_config(app_config):
    """External DOIs on, as in the source (RDM drops the doi scheme otherwise); the
    transformers by configuration (a venv's entry points may be another worktree's)."""
    from oaiharvest_test_support.rdm import rdm_config

    app_config["RDM_PERSISTENT_IDENTIFIERS"] = rdm_config(external_dois=True)[
        "RDM_PERSISTENT_IDENTIFIERS"
    ]
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        "oai_dc_rdm": DublinCoreRDMTransformer,
        "oai_datacite_rdm": DataCiteRDMTransformer,
        "marcxml_rdm": MARCXMLRDMTransformer,
    }
    return app_config


# -- what is compared --------------------------------------------------------------------------
def _names(people: list[dict[str, Any]]) -> list[str]:
    return [person["person_or_org"]["name"] for person in people]


FIELDS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "title": lambda m: m["title"],
    "additional_titles": lambda m: [
        (t["title"], t["type"]["id"]) for t in m.get("additional_titles", [])
    ],
    "creator_names": lambda m: _names(m["creators"]),
    "creator_types": lambda m: [c["person_or_org"]["type"] for c in m["creators"]],
    "creator_identifiers": lambda m: [
        sorted((i["scheme"], i["identifier"]) for i in c["person_or_org"].get("identifiers", []))
        for c in m["creators"]
    ],
    "affiliations": lambda m: [
        [a.get("name") or a.get("id") for a in c.get("affiliations", [])] for c in m["creators"]
    ],
    "contributor_names": lambda m: _names(m.get("contributors", [])),
    "contributor_roles": lambda m: [c["role"]["id"] for c in m.get("contributors", [])],
    "publication_date": lambda m: m["publication_date"],
    "dates": lambda m: [(d["date"], d["type"]["id"]) for d in m.get("dates", [])],
    "languages": lambda m: [language["id"] for language in m.get("languages", [])],
    "subjects": lambda m: [s["subject"] for s in m.get("subjects", [])],
    "licenses": lambda m: [r["id"] for r in m.get("rights", []) if "id" in r],
    "rights": lambda m: [r.get("id") or r["title"]["en"] for r in m.get("rights", [])],
    "doi": lambda m: m["_doi"],
    "identifiers": lambda m: [(i["scheme"], i["identifier"]) for i in m.get("identifiers", [])],
    "related_identifiers": lambda m: [
        (r["scheme"], r["identifier"], r["relation_type"]["id"])
        for r in m.get("related_identifiers", [])
        if not is_provenance_link(r, m)
    ],
    "description": lambda m: m.get("description"),
    "additional_descriptions": lambda m: [
        (d["description"], d["type"]["id"]) for d in m.get("additional_descriptions", [])
    ],
    "publisher": lambda m: m.get("publisher"),
    "resource_type": lambda m: m["resource_type"]["id"],
    "files_access": lambda m: m["_files_access"],
}
"""A view of an RDM record per compared field (vocabulary entries by id, people by name)."""


def is_provenance_link(related: dict[str, Any], metadata: dict[str, Any]) -> bool:
    """The link to the source that every harvested record gets (oarepo_oaipmh_harvester.
    provenance): its landing page, or the provider's GetRecord URL. Not part of the round trip."""
    if related["relation_type"]["id"] != "isderivedfrom":
        return False
    pages = {i["identifier"] for i in metadata.get("identifiers", []) if i["scheme"] == "url"}
    return related["identifier"] in pages or "verb=GetRecord" in related["identifier"]


def view(record: dict[str, Any], field: str) -> Any:
    metadata = {
        **record["metadata"],
        "_doi": record.get("pids", {}).get("doi", {}).get("identifier"),
        "_files_access": record["access"]["files"],
    }
    return FIELDS[field](metadata)


@dataclass(frozen=True)
class RoundTrip:
    """One format's round trip: what must survive, and what is lost and how (as measured)."""

    metadata_prefix: str
    transformer: str
    equal: frozenset[str]
    lost: Mapping[str, str]

    def __post_init__(self) -> None:
        assert not self.equal & self.lost.keys()
        assert (self.equal | self.lost.keys()) <= FIELDS.keys()


OAI_DC = RoundTrip(
    "oai_dc",
    "oai_dc_rdm",
    equal=frozenset(
        {
            "title",
            "creator_names",
            "contributor_names",
            "publication_date",
            "languages",
            "subjects",
            "licenses",
            "rights",
            "doi",
            "identifiers",
            "publisher",
            "description",
        }
    ),
    lost={
        "additional_titles": "not served (dc:title is the main title only)",
        "creator_types": (
            "a person with one name comes back as an organisation, an organisation whose "
            "name has a comma as a person"
        ),
        "creator_identifiers": "ORCID and ROR identifiers are not served",
        "affiliations": "not served",
        "contributor_roles": "every contributor comes back with the role `other`",
        "dates": "only the publication date is served",
        "related_identifiers": "the relation type becomes `other` (and the resource type goes)",
        "additional_descriptions": "their type becomes `other`",
        "resource_type": "types served as eu-repo `other` (dataset, software, image) become `other`",
        "files_access": "metadata-only records are served as closedAccess: files `restricted`",
    },
)
"""Measured with invenio-rdm-records 32 and 36: their Dublin Core serializer and our oai_dc_rdm."""

OAI_DATACITE = RoundTrip(
    "oai_datacite",
    "oai_datacite_rdm",
    equal=frozenset(FIELDS) - {"dates", "description", "languages"},
    lost={
        "dates": "the source's serializer adds the record's modification day as an Updated date",
        "description": "HTML markup is stripped (the text survives)",
        "languages": "DataCite kernel 4 holds one language: only the first survives",
    },
)
"""Measured with invenio-rdm-records 32 and 36: their DataCite serializer and our oai_datacite_rdm."""

MARCXML = RoundTrip(
    "marcxml",
    "marcxml_rdm",
    equal=frozenset(FIELDS)
    - {
        "additional_titles",
        "creator_types",
        "creator_identifiers",
        "dates",
        "identifiers",
        "additional_descriptions",
    },
    lost={
        "additional_titles": "not served (245 $a is the main title only)",
        "creator_types": (
            "every name is a 100/700 with blank indicators: a person with one name comes back "
            "as an organisation, an organisation whose name has a comma as a person"
        ),
        "creator_identifiers": "only GND and ORCID are served ($0); ROR and ISNI are not",
        "dates": "only the publication date is served (260 $c)",
        "identifiers": "only a DOI is served (024); URLs, ISBNs and the rest are not",
        "additional_descriptions": "served as 500 notes: their type becomes `other`",
    },
)
"""Measured with invenio-rdm-records 36: its MARCXML serializer and our marcxml_rdm."""

ROUND_TRIPS = [
    pytest.param(OAI_DC, id="oai_dc"),
    pytest.param(OAI_DATACITE, id="oai_datacite"),
    pytest.param(MARCXML, id="marcxml"),
]


# -- the source records ------------------------------------------------------------------------
def person(family: str, given: str | None = None, orcid: str | None = None, **extra: Any):
    entry: dict[str, Any] = {"type": "personal", "family_name": family}
    if given:
        entry["given_name"] = given
    if orcid:
        entry["identifiers"] = [{"scheme": "orcid", "identifier": orcid}]
    return {"person_or_org": entry, **extra}


def organisation(name: str, ror: str | None = None, **extra: Any):
    entry: dict[str, Any] = {"type": "organizational", "name": name}
    if ror:
        entry["identifiers"] = [{"scheme": "ror", "identifier": ror}]
    return {"person_or_org": entry, **extra}


def record(metadata: dict[str, Any], doi: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "access": {"record": "public", "files": "public"},
        "files": {"enabled": False},
        "metadata": metadata,
    }
    if doi:
        data["pids"] = {"doi": {"identifier": doi, "provider": "external"}}
    return data


SOURCE_RECORDS = [
    record(
        {
            "resource_type": {"id": "publication-article"},
            "title": "Spectral lattice models of quasicrystals",
            "additional_titles": [
                {
                    "title": "Spektrale Gittermodelle von Quasikristallen",
                    "type": {"id": "translated-title"},
                    "lang": {"id": "deu"},
                }
            ],
            "creators": [
                person("Novák", "Jan", orcid="0000-0002-1825-0097"),
                organisation("CERN", ror="01ggx4157"),
            ],
            "contributors": [person("Müller", "Anna", role={"id": "editor"})],
            "publication_date": "2021-03-04",
            "dates": [{"date": "2020", "type": {"id": "created"}}],
            "languages": [{"id": "eng"}, {"id": "deu"}],
            "subjects": [{"subject": "lattice models"}, {"subject": "quasicrystals"}],
            "rights": [{"id": "cc-by-4.0"}],
            "description": "<p>We study <b>spectral</b> lattice models.</p>",
            "additional_descriptions": [
                {"description": "Exact diagonalisation.", "type": {"id": "methods"}}
            ],
            "publisher": "Example University Press",
            "identifiers": [
                {"scheme": "url", "identifier": "https://repository.example.org/records/42"}
            ],
            "related_identifiers": [
                {
                    "scheme": "doi",
                    "identifier": "10.5555/journal.issue.7",
                    "relation_type": {"id": "ispartof"},
                    "resource_type": {"id": "publication-journal"},
                }
            ],
        },
        doi="10.1234/spectral.2021",
    ),
    record(
        {
            "resource_type": {"id": "dataset"},
            "title": "Daily river temperatures of the Vltava, 2019-2020",
            "creators": [
                person(
                    "Svobodová",
                    "Petra",
                    orcid="0000-0001-5109-3700",
                    affiliations=[{"name": "Charles University"}],
                ),
                organisation("Charles University", ror="024d6js02"),
            ],
            "publication_date": "2019/2020",
            "languages": [{"id": "ces"}],
            "subjects": [{"subject": "hydrology"}, {"subject": "teplota vody"}],
            "rights": [{"id": "cc0-1.0"}],
            "description": "Water temperature at six gauges, measured daily.",
            "related_identifiers": [
                {
                    "scheme": "url",
                    "identifier": "https://data.example.org/vltava/2018",
                    "relation_type": {"id": "isversionof"},
                }
            ],
        },
        doi="10.1234/vltava.temperatures",
    ),
    record(
        {
            "resource_type": {"id": "software"},
            "title": "lattice-tools",
            "creators": [organisation("CERN", ror="01ggx4157")],
            "publication_date": "2022-11",
            "languages": [{"id": "eng"}],
            "rights": [{"title": {"en": "Copyright CERN, all rights reserved"}}],
            "subjects": [{"subject": "software"}],
        },
        doi="10.1234/lattice-tools",
    ),
    record(
        {
            "resource_type": {"id": "publication-book"},
            "title": "Monographie des réseaux",
            "creators": [person("Plato")],  # a person with one name only
            "publication_date": "2018",
            "languages": [{"id": "fra"}],
            "publisher": "Éditions Exemple",
            "identifiers": [{"scheme": "isbn", "identifier": "978-3-16-148410-0"}],
        }
    ),
    record(
        {
            "resource_type": {"id": "publication-report"},
            "title": "Zpráva o správě výzkumných dat — 2023",
            # An organisation whose name has a comma, as many universities' names have.
            "creators": [organisation("University of California, Berkeley", ror="01an7q238")],
            "publication_date": "2023-01-15",
            "languages": [{"id": "ces"}, {"id": "eng"}],
            "subjects": [{"subject": "research data"}, {"subject": "výzkumná data"}],
            "rights": [{"id": "cc-by-4.0"}],
            "description": "Annual report.",
        }
    ),
    record(
        {
            "resource_type": {"id": "image"},
            "title": "The Charles Bridge at dawn",
            "creators": [person("Nováková", "Eva", orcid="0000-0002-1694-233X")],
            "publication_date": "2020-06-21",
            "subjects": [{"subject": "Prague"}, {"subject": "bridges"}],
            "rights": [{"id": "cc-by-4.0"}],
        }
    ),
]


# -- helpers -----------------------------------------------------------------------------------
def tracking() -> dict[str, OAIHarvestedRecord]:
    db.session.expire_all()
    rows = db.session.scalars(
        db.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == "test")
    )
    return {row.oai_identifier: row for row in rows}


def harvested(rdm, oai_identifier: str) -> dict[str, Any]:
    return rdm.read(system_identity, tracking()[oai_identifier].local_pid).to_dict()


def differences(source: dict[str, Any], target: dict[str, Any], fields) -> dict[str, tuple]:
    return {
        field: (view(source, field), view(target, field))
        for field in sorted(fields)
        if view(source, field) != view(target, field)
    }


def wait_for_the_next_second(*published: dict[str, Any]) -> None:
    """Until the source's clock has left the second of the latest change: windows are
    inclusive to the second at both ends, so a record changed in the second of a run's
    Identify is listed by the next run too (unchanged), and the counts below are exact."""
    from datetime import UTC, datetime

    latest = max(
        datetime.fromisoformat(p["updated"]).astimezone(UTC).replace(microsecond=0)
        for p in published
    )
    wait_until(lambda: datetime.now(UTC).replace(microsecond=0) > latest, timeout=3)


# -- the round trip ----------------------------------------------------------------------------
@pytest.mark.parametrize("trip", ROUND_TRIPS)
def test_round_trip(rdm, oai_source: OAIServerSource, trip: RoundTrip):
    published = [oai_source.publish(data) for data in SOURCE_RECORDS]
    sources = {p["oai"]: p["record"] for p in published}
    wait_for_the_next_second(*published)
    make_harvester(
        oai_source.base_url,
        metadata_prefix=trip.metadata_prefix,
        target=RDM_TARGET,
        transformer=trip.transformer,
        batch_size=3,
    )

    first = run_harvest("test")

    assert first.succeeded and first.counts.created == len(SOURCE_RECORDS), first.message()
    rows = tracking()
    assert set(rows) == set(sources)
    assert [row.errors for row in rows.values()] == [None] * len(rows)
    targets = {identifier: harvested(rdm, identifier) for identifier in sources}
    for identifier, source in sources.items():
        assert differences(source, targets[identifier], trip.equal) == {}, identifier
    # Each loss is a measured one: some record shows it (else move the field to `equal`).
    lost = {
        field
        for identifier, source in sources.items()
        for field in differences(source, targets[identifier], trip.lost)
    }
    assert lost == trip.lost.keys()

    # -- changes at the source reach the target ---------------------------------------------
    edited_source, gone_source = published[0], published[1]
    edited_pid = rows[edited_source["oai"]].local_pid
    gone_pid = rows[gone_source["oai"]].local_pid
    revision = targets[edited_source["oai"]]["revision_id"]
    edited = oai_source.edit(
        edited_source["id"],
        {"title": "Spectral lattice models, revised", "subjects": [{"subject": "revised"}]},
    )
    oai_source.delete(gone_source["id"])

    incremental = run_harvest("test")

    assert incremental.succeeded and (incremental.counts.updated, incremental.counts.total) == (
        1,
        1,
    )
    after = rdm.read(system_identity, edited_pid).to_dict()
    assert differences(edited["record"], after, trip.equal) == {}
    assert after["revision_id"] > revision and after["versions"]["index"] == 1
    # deletedRecord=no: the tombstone is never listed; an incremental run cannot see it.
    assert rdm.read(system_identity, gone_pid).to_dict()["id"] == gone_pid

    # ListIdentifiers in full, then the records no longer listed are tombstoned.
    reconciliation = run_harvest("test", reconcile_only=True)

    assert reconciliation.succeeded and reconciliation.counts.deleted == 1
    with pytest.raises(RecordDeletedException):
        rdm.read(system_identity, gone_pid)
    assert tracking()[gone_source["oai"]].deleted

    restored = oai_source.restore(gone_source["id"])

    after_restore = run_harvest("test")

    assert after_restore.succeeded and after_restore.counts.updated == 1
    back = rdm.read(system_identity, gone_pid).to_dict()
    assert back["id"] == gone_pid  # read without include_deleted: live again
    assert differences(restored["record"], back, trip.equal) == {}
    row = tracking()[gone_source["oai"]]
    assert not row.deleted and row.local_pid == gone_pid


# -- with files --------------------------------------------------------------------------------
def files_of(rdm, pid: str) -> dict[str, str]:
    listing = rdm.files.list_files(system_identity, pid).to_dict()
    return {entry["key"]: entry["checksum"] for entry in listing.get("entries") or ()}


def test_round_trip_of_records_with_files(rdm, oai_source: OAIServerSource):
    """Records with files in the source RDM, served as ``marcxml`` (8564: file URL, size, MD5)
    by its invenio-oaiserver, harvested with files copy: the target's records hold the same
    files (checksums); a run with nothing changed downloads nothing; a new version at the
    source with one file changed arrives with both files right."""
    article = record(SOURCE_RECORDS[0]["metadata"])
    with_files = oai_source.publish(
        article, files={"paper.pdf": "%PDF spectral lattice\n" * 50, "data.csv": "x,y\n1,2\n"}
    )
    plain = oai_source.publish(record(SOURCE_RECORDS[2]["metadata"]))
    wait_for_the_next_second(with_files, plain)
    make_harvester(
        oai_source.base_url,
        metadata_prefix="marcxml",
        target=RDM_TARGET,
        transformer="marcxml_rdm",
        files="copy",
    )

    first = run_harvest("test")

    assert first.succeeded and first.counts.created == 2, first.message()
    assert first.counts.files["fetched"] == 2 and first.counts.files["failed"] == 0
    source_files = {
        key: entry["checksum"] for key, entry in with_files["record"]["files"]["entries"].items()
    }
    row = tracking()[with_files["oai"]]
    assert files_of(rdm, row.local_pid) == source_files
    assert [f["status"] for f in row.files] == ["fetched", "fetched"]
    assert files_of(rdm, tracking()[plain["oai"]].local_pid) == {}

    again = run_harvest("test")
    assert again.succeeded and again.counts.files.get("fetched", 0) == 0

    version = oai_source.new_version(with_files["id"], {"paper.pdf": "%PDF revised\n" * 50})
    wait_for_the_next_second(version)
    changed = run_harvest("test")

    assert changed.succeeded and changed.counts.created == 1, changed.message()
    new_row = tracking()[version["oai"]]
    expected = {key: e["checksum"] for key, e in version["record"]["files"]["entries"].items()}
    assert expected["data.csv"] == source_files["data.csv"]
    assert expected["paper.pdf"] != source_files["paper.pdf"]
    assert files_of(rdm, new_row.local_pid) == expected


def test_a_changed_file_of_a_record_with_a_doi_makes_a_version_without_it(rdm):
    """External DOIs on (as in a site that takes harvested DOIs): a record whose file changes at
    the source gets a new version, which RDM cannot give the same DOI; the DOI stays with the
    version that holds it, the new version says so, and later harvests update the new version."""
    import hashlib

    from oarepo_oaipmh_harvester.testing.corpus import Corpus
    from oarepo_oaipmh_harvester.testing.corpus_marc import marcxml_document
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider, served_document_key

    def document(url: str, content: bytes, title: str) -> str:
        return marcxml_document(
            [
                ("001", "77"),
                ("008", "230101s2023    xx            000 0 eng d"),
                ("024", "7 ", [("a", "10.1234/files.77"), ("2", "doi")]),
                ("100", "1 ", [("a", "Novák, Jan,"), ("e", "author.")]),
                ("245", "10", [("a", title)]),
                ("264", " 1", [("a", "Prague :"), ("b", "Example Press,"), ("c", "2023.")]),
                ("856", "40", [("u", url), ("s", str(len(content))),
                               ("z", "md5:" + hashlib.md5(content).hexdigest())]),  # noqa: S324
            ],
            collection=False,
        )  # fmt: skip

    first_pdf, second_pdf = b"%PDF first\n" * 100, b"%PDF second\n" * 100
    corpus = Corpus()
    with OAIPMHProvider(corpus, metadata_prefixes=("marcxml",)) as provider:
        url = provider.serve_file("77/paper.pdf", first_pdf)
        key = served_document_key("marcxml")
        corpus.add("oai:x:77", {"title": ["77"], key: [document(url, first_pdf, "Lattices")]})
        make_harvester(
            provider.base_url,
            metadata_prefix="marcxml",
            target=RDM_TARGET,
            transformer="marcxml_rdm",
            files="copy",
        )
        assert run_harvest("test").counts.created == 1
        first = tracking()["oai:x:77"].local_pid
        assert rdm.read(system_identity, first).to_dict()["pids"]["doi"]["identifier"] == (
            "10.1234/files.77"
        )

        corpus.advance_clock(hours=1)
        provider.serve_file("77/paper.pdf", second_pdf)
        corpus.update("oai:x:77", {"title": ["77"], key: [document(url, second_pdf, "Lattices")]})
        changed = run_harvest("test")

        assert (changed.counts.updated, changed.counts.failed) == (1, 0), changed.message()
        row = tracking()["oai:x:77"]
        assert row.local_pid != first
        newest = rdm.read(system_identity, row.local_pid).to_dict()
        assert "doi" not in newest["pids"]
        assert newest["versions"]["index"] == 2
        assert rdm.read(system_identity, first).to_dict()["pids"]["doi"]["identifier"] == (
            "10.1234/files.77"
        )
        assert any("keeps DOI 10.1234/files.77" in w for w in row.warnings)
        listing = rdm.files.list_files(system_identity, row.local_pid).to_dict()
        assert [e["checksum"] for e in listing["entries"]] == [
            "md5:" + hashlib.md5(second_pdf).hexdigest()  # noqa: S324
        ]

        # The metadata changes again: the new version is updated in place, its DOI-less state
        # no conflict with the first version's DOI.
        corpus.advance_clock(hours=1)
        corpus.update(
            "oai:x:77", {"title": ["77"], key: [document(url, second_pdf, "Lattices II")]}
        )
        again = run_harvest("test")
        assert (again.counts.updated, again.counts.failed) == (1, 0), again.message()
        assert tracking()["oai:x:77"].local_pid == row.local_pid
        assert rdm.read(system_identity, row.local_pid).to_dict()["metadata"]["title"] == (
            "Lattices II"
        )


def test_a_file_whose_checksum_differs_from_the_source_s_is_never_stored(rdm):
    """The source's 856 says one MD5, the server sends other bytes: the record fails (files
    failure fail) naming the checksum, and nothing of it is stored; with metadata-only it is
    published without that file."""
    from oarepo_oaipmh_harvester.proxies import current_harvester_service
    from oarepo_oaipmh_harvester.testing.corpus import Corpus
    from oarepo_oaipmh_harvester.testing.corpus_marc import marcxml_document
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider, served_document_key

    corpus = Corpus()
    with OAIPMHProvider(corpus, metadata_prefixes=("marcxml",)) as provider:
        url = provider.serve_file("78/paper.pdf", b"%PDF tampered\n" * 10)
        wrong = "md5:" + "0" * 32
        document = marcxml_document(
            [
                ("001", "78"),
                ("008", "230101s2023    xx            000 0 eng d"),
                ("100", "1 ", [("a", "Novák, Jan,"), ("e", "author.")]),
                ("245", "10", [("a", "Tampered")]),
                ("264", " 1", [("a", "Prague :"), ("b", "Example Press,"), ("c", "2023.")]),
                ("856", "40", [("u", url), ("z", wrong)]),
            ],
            collection=False,
        )
        corpus.add("oai:x:78", {"title": ["78"], served_document_key("marcxml"): [document]})
        make_harvester(
            provider.base_url,
            metadata_prefix="marcxml",
            target=RDM_TARGET,
            transformer="marcxml_rdm",
            files="copy",
            files_failure="fail",
        )

        failed = run_harvest("test")

        assert (failed.counts.created, failed.counts.failed) == (0, 1)
        row = tracking()["oai:x:78"]
        assert row.local_pid is None
        assert "paper.pdf" in row.errors[0] and "checksum" in row.errors[0].lower()
        assert rdm.search(system_identity).total == 0
        assert rdm.search_drafts(system_identity).total == 0

        current_harvester_service.update(
            system_identity, "test", {"files_failure": "metadata-only"}, check=False
        )
        published = run_harvest("test", force=True)
        assert (published.counts.created, published.counts.failed) == (1, 0)
        row = tracking()["oai:x:78"]
        assert rdm.read(system_identity, row.local_pid).to_dict()["files"]["enabled"] is False
        assert row.files[0]["status"] == "failed"
