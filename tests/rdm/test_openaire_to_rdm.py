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
MESH_CALCIMYCIN = "https://id.nlm.nih.gov/mesh/D000001"
MISSING_DATE = "OAI_HARVESTER_RDM_MISSING_DATE"
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
        openaire_resource(
            etree.fromstring("<resource xmlns='http://datacite.org/schema/kernel-4'/>"), "x"
        )
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
        "subjects": [{"id": MESH_CALCIMYCIN, "scheme": "MeSH", "subject": "Calcimycin"}],
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


def names(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            entry["person_or_org"]["type"],
            entry["person_or_org"]["name"],
            [(i["scheme"], i["identifier"]) for i in entry["person_or_org"].get("identifiers", [])],
            [(a.get("id"), a["name"]) for a in entry.get("affiliations", [])],
        )
        for entry in entries
    ]


def test_a_journal_article_is_published_with_every_value(rdm_openaire, transformer):
    data = transformer.transform(harvested(DOCUMENTS["article"]))
    assert transformer.last_warnings == []

    record = publish(rdm_openaire, data)

    metadata = record["metadata"]
    assert metadata["title"] == "Spectral lattice models"
    assert [
        (t["title"], t["type"]["id"], t["lang"]["id"]) for t in metadata["additional_titles"]
    ] == [
        ("Photographs of the set-up", "subtitle", "eng"),
        ("Spektrale Gittermodelle", "translated-title", "deu"),
    ]
    assert names(metadata["creators"]) == [
        (
            "personal",
            "Novák, Jan",
            [("orcid", "0000-0002-1825-0097")],
            [
                ("01ggx4157", "European Organization for Nuclear Research"),
                (None, "Charles University"),
            ],
        ),
        # "ORCID iD" is no scheme RDM knows; its schemeURI says which it is.
        ("personal", "Dvořáková, Eliška", [("orcid", "0000-0001-5109-3700")], []),
        (
            "organizational",
            "European Organization for Nuclear Research",
            [("ror", "01ggx4157")],
            [],
        ),
    ]
    assert [(c["person_or_org"]["name"], c["role"]["id"]) for c in metadata["contributors"]] == [
        ("Svoboda, Petr", "editor"),
        ("CESNET", "hostinginstitution"),
    ]
    assert metadata["publication_date"] == "2021-03-04"
    assert [(d["date"], d["type"]["id"]) for d in metadata["dates"]] == [
        ("2020-12-01", "accepted"),
        ("2021-03-04", "available"),
    ]
    assert metadata["resource_type"]["id"] == "publication-article"
    assert [language["id"] for language in metadata["languages"]] == ["eng"]
    assert metadata["publisher"] == "Example University Press"
    assert record["access"]["record"] == "public" and record["access"]["files"] == "public"
    assert [right["id"] for right in metadata["rights"]] == ["cc-by-4.0"]
    assert metadata["identifiers"] == [
        {"identifier": "11234/1", "scheme": "handle"},
        {"identifier": "10.1234/lattice.1", "scheme": "doi"},
        {"identifier": "978-3-16-148410-0", "scheme": "isbn"},
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
        ("0947-6539", "issn", "ispartof", None),
        ("10.5555/journal.article.7", "doi", "references", None),
        ("https://repository.example.org/1/article.pdf", "url", "haspart", "publication"),
    ]
    assert [s.get("id") or s["subject"] for s in metadata["subjects"]] == [
        "lattice",
        MESH_CALCIMYCIN,
    ]
    assert metadata["subjects"][1]["scheme"] == "MeSH"
    assert metadata["description"] == "We study spectral lattice models &amp; their photographs."
    assert [
        (d["description"], d["type"]["id"], d["lang"]["id"])
        for d in metadata["additional_descriptions"]
    ] == [("Wir untersuchen spektrale Gittermodelle.", "abstract", "deu")]
    assert metadata["formats"] == ["application/pdf"] and metadata["sizes"] == ["12 pages"]
    assert metadata["version"] == "VoR"
    assert metadata["locations"]["features"] == [
        {"place": "Geneva", "geometry": {"type": "Point", "coordinates": [6.05, 46.23]}}
    ]
    ec, dfg, gacr = metadata["funding"]
    assert (ec["funder"]["id"], ec["award"]["id"]) == ("00k4n6c32", AWARD_ID)
    # The Crossref Funder ID found the funder; the OpenAIRE project id is the award number.
    assert dfg["funder"]["id"] == DFG
    assert dfg["award"] == {"number": "info:eu-repo/grantAgreement/DFG//390685689/"}
    assert gacr["funder"] == {"name": "Czech Science Foundation"}
    assert gacr["award"] == {
        "number": "21-00001S",
        "title": {"en": "Lattice spectra"},
        "identifiers": [{"scheme": "doi", "identifier": "10.5555/gacr.21-00001S"}],
    }
    assert record["custom_fields"]["journal:journal"] == {
        "title": "Journal of Lattice Studies",
        "volume": "23",
        "issue": "31",
        "pages": "7444-7447",
        "issn": "0947-6539",  # the ISSN it is part of (a related identifier too)
    }


@pytest.mark.parametrize(
    ("name", "resource_type", "files", "custom"),
    [
        (
            "embargoed-thesis",
            "publication-dissertation",
            "restricted",
            {},
        ),
        (
            "restricted-chapter",
            "publication-section",
            "restricted",
            {
                "journal:journal": {"title": "Lattices, a handbook", "issn": "0947-6539"},
                "imprint:imprint": {"edition": "2nd"},
            },
        ),
        (
            "metadata-only-dataset",
            "dataset",
            "restricted",
            {"meeting:meeting": {"place": "Geneva", "dates": "2021-05-03/2021-05-07"}},
        ),
    ],
)
def test_coar_access_rights_types_and_citation_fields(
    rdm_openaire, transformer, name, resource_type, files, custom
):
    data = transformer.transform(harvested(DOCUMENTS[name]))
    assert transformer.last_warnings == []

    record = publish(rdm_openaire, data)

    assert record["metadata"]["resource_type"]["id"] == resource_type
    assert record["access"]["record"] == "public" and record["access"]["files"] == files
    if name == "embargoed-thesis":
        assert record["access"]["embargo"] == {
            "active": True,
            "until": "2999-01-01",
            "reason": None,
        }
    else:
        assert record["access"]["embargo"]["active"] is False
    assert record.get("custom_fields", {}) == custom


def test_an_embargo_that_has_ended_restricts_the_files_with_a_warning(rdm_openaire, transformer):
    ended = DOCUMENTS["embargoed-thesis"].replace("2999-01-01", "2001-01-01")
    data = transformer.transform(harvested(ended))
    assert transformer.last_warnings == [
        "rights embargoed access without a future Available date: files restricted, no embargo set."
    ]
    assert data["access"] == {"record": "public", "files": "restricted"}


def test_unmappable_values_are_warnings_on_a_valid_record(rdm_openaire, transformer):
    data = transformer.transform(harvested(DOCUMENTS["no-creator"]))
    assert transformer.last_warnings == [
        "Creators: no datacite:creator with a name; using its contributors as creators "
        "('Svoboda, Petr', 'CESNET'; missing_creator contributors).",
        "resourceType 'http://purl.org/coar/resource_type/c_0000': not a COAR resource type of "
        "the table; using 'publication' by resourceTypeGeneral 'literature'.",
        "licenseCondition 'Creative Commons Attribution 4.0': 'https://example.org/terms' is "
        "not in the licenses vocabulary; kept as text.",
        "<coverage> '17th century': no RDM field is mapped; dropped.",
        "<source> 'Journal of Flyers, 3': no RDM field is mapped; dropped.",
        "<audience> 'Researchers': no RDM field is mapped; dropped.",
    ]

    record = publish(rdm_openaire, data)

    metadata = record["metadata"]
    assert [c["person_or_org"]["name"] for c in metadata["creators"]] == ["Svoboda, Petr", "CESNET"]
    assert metadata["resource_type"]["id"] == "publication"
    assert metadata["rights"] == [
        {"title": {"en": "Creative Commons Attribution 4.0"}, "link": "https://example.org/terms"}
    ]


def test_odd_values_of_a_real_repository_are_warnings(rdm_openaire, transformer):
    odd = openaire_document(
        "6",
        coar_type=("c_18cf", "text"),
        access=("c_abf2", "open access"),
        funding=(
            "<oaire:fundingReference><oaire:funderName>Ministry of Lattices</oaire:funderName>"
            '<oaire:funderIdentifier funderIdentifierType="Crossref Funder ID">'
            "10.13039/999999999</oaire:funderIdentifier><oaire:fundingStream>Stream A"
            '</oaire:fundingStream><oaire:awardNumber awardURI="urn:grant:1">1</oaire:awardNumber>'
            "</oaire:fundingReference>"
        ),
        files=(
            ("https://repository.example.org/6/data.csv", "text/csv", "dataset", "c_16ec"),
            ("not a link", "text/plain", "other", "c_abf2"),
        ),
        extra=(
            '<oaire:licenseCondition startDate="2021-03-04" '
            'uri="http://creativecommons.org/licenses/by/4.0/">CC BY 4.0</oaire:licenseCondition>'
            '<datacite:rights rightsURI="http://purl.org/coar/access_right/c_16ec">restricted'
            "</datacite:rights>"
            '<oaire:version uri="http://example.org/version/final"></oaire:version>'
        ),
    )
    data = transformer.transform(harvested(odd))
    assert transformer.last_warnings == [
        "rights: access rights c_abf2, c_16ec; the most restrictive holds for the files.",
        "licenseCondition 'CC BY 4.0': startDate '2021-03-04' has no RDM field; dropped.",
        "fundingReference 'Ministry of Lattices': funder identifier '10.13039/999999999' is not "
        "in the funders vocabulary; kept the name.",
        "fundingReference 'Ministry of Lattices': fundingStream 'Stream A' has no RDM field; "
        "dropped.",
        "fundingReference 'Ministry of Lattices': awardURI 'urn:grant:1' is neither a DOI nor a "
        "URL; dropped.",
        "file 'not a link': not a URL; dropped.",
    ]
    record = publish(rdm_openaire, data)
    # A restricted right anywhere (the record's second one, a file's) is never published open.
    assert record["access"]["files"] == "restricted"
    metadata = record["metadata"]
    assert metadata["resource_type"]["id"] == "publication"
    assert [right["id"] for right in metadata["rights"]] == ["cc-by-4.0"]
    assert metadata["formats"] == ["application/pdf", "text/csv"]
    assert metadata["related_identifiers"][-1]["resource_type"]["id"] == "dataset"
    assert metadata["funding"][-1] == {
        "funder": {"name": "Ministry of Lattices"},
        "award": {"number": "1"},
    }


@pytest.mark.parametrize(
    ("rights", "files", "expected"),
    [
        # A file embargoed in a record whose rights say open: the files wait for its end.
        ("c_abf2", "c_f1cf", ("restricted", True)),
        # An embargo written as text only (no rightsURI), as some exporters do.
        ("text:info:eu-repo/semantics/embargoedAccess", None, ("restricted", True)),
        ("text:embargoed access", None, ("restricted", True)),
        ("text:metadata only access", "c_abf2", ("restricted", False)),
        ("c_abf2", "c_abf2", ("public", False)),
    ],
)
def test_the_most_restrictive_access_right_holds_for_the_files(
    rdm_openaire, transformer, rights, files, expected
):
    right = (
        f"<datacite:rights>{rights[5:]}</datacite:rights>"
        if rights.startswith("text:")
        else f'<datacite:rights rightsURI="http://purl.org/coar/access_right/{rights}">'
        "</datacite:rights>"
    )
    document = openaire_document(
        "7",
        access=("", ""),
        available="2999-01-01",
        files=(("https://repository.example.org/7/a.pdf", "application/pdf", "fulltext", files),)
        if files
        else (),
        extra=right,
    )
    data = transformer.transform(harvested(document))
    files_access, embargoed = expected
    assert data["access"]["files"] == files_access, transformer.last_warnings
    assert ("embargo" in data["access"]) is embargoed
    if embargoed:
        assert data["access"]["embargo"] == {"active": True, "until": "2999-01-01"}
    publish(rdm_openaire, data)


def test_citation_fields_a_site_does_not_define_are_warnings(rdm_openaire, app, monkeypatch):
    monkeypatch.setitem(app.config, "RDM_CUSTOM_FIELDS", [])
    transformer = OpenAIRERDMTransformer()
    data = transformer.transform(harvested(DOCUMENTS["article"]))
    assert "custom_fields" not in data
    assert transformer.last_warnings == [
        "citationTitle 'Journal of Lattice Studies': the site defines no journal:journal custom "
        "field; dropped.",
        "citationVolume '23': the site defines no journal:journal custom field; dropped.",
        "citationIssue '31': the site defines no journal:journal custom field; dropped.",
        "citationStartPage/EndPage '7444-7447': the site defines no journal:journal custom "
        "field; dropped.",
    ]


def test_required_fields_and_their_policies(rdm_openaire, transformer, app, monkeypatch):
    untitled = (
        DOCUMENTS["article"]
        .replace('<datacite:title xml:lang="en">Spectral lattice models</datacite:title>', "")
        .replace("<datacite:titles>", "<datacite:titles><datacite:title>ab</datacite:title>")
    )
    with pytest.raises(TransformError, match="no title of at least 3 characters"):
        transformer.transform(
            harvested(
                untitled.split("<datacite:title titleType")[0]
                + "</datacite:titles></oaire:resource>"
            )
        )
    creatorless = harvested(DOCUMENTS["no-creator"])
    with pytest.raises(TransformError, match="no DataCite creator with a name"):
        OpenAIRERDMTransformer(missing_creator="fail").transform(creatorless)
    undated = DOCUMENTS["article"].replace(
        '<datacite:date dateType="Issued">2021-03-04</datacite:date>', ""
    )
    data = transformer.transform(harvested(undated, datestamp="2017-03-21T09:00:00Z"))
    assert data["metadata"]["publication_date"] == "2017"
    assert transformer.last_warnings[0].startswith("Publication date: no Issued date")
    monkeypatch.setitem(app.config, MISSING_DATE, "fail")
    with pytest.raises(TransformError, match="no publication date"):
        OpenAIRERDMTransformer().transform(harvested(undated))


# -- harvested through OAI-PMH from the bundled provider --------------------------------------
@pytest.fixture()
def repository(rdm_openaire, custom_fields):
    corpus = openaire_corpus()
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    with OAIPMHProvider(
        corpus, page_size=2, metadata_prefixes=("oai_dc", OPENAIRE_PREFIX)
    ) as running:
        yield running


def test_harvest_of_the_oai_openaire_prefix_publishes_every_record(rdm_openaire, repository):
    make_harvester(
        repository.base_url,
        target=RDM_TARGET,
        transformer=TRANSFORMER,
        metadata_prefix=OPENAIRE_PREFIX,
    )

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (len(DOCUMENTS), 0)
    rows = tracking()
    assert {row.oai_identifier.rsplit(":", 1)[-1] for row in rows.values()} == set(DOCUMENTS)
    for name, document in DOCUMENTS.items():
        row = rows[f"oai:repository.example.org:{name}"]
        transformer = OpenAIRERDMTransformer()
        expected = transformer.transform(
            harvested(document, identifier=row.oai_identifier, datestamp=row_datestamp(row))
        )
        assert not row.errors
        assert row.warnings == (transformer.last_warnings or None)
        published = rdm_openaire.read(system_identity, row.local_pid).to_dict()
        # The writer adds the provenance link (a related identifier `isderivedfrom`, last).
        *related, source_link = published["metadata"]["related_identifiers"]
        assert source_link["relation_type"]["id"] == "isderivedfrom", source_link
        published["metadata"]["related_identifiers"] = related
        for field in set(expected["metadata"]):
            wanted = vocabulary_names_dropped(expected["metadata"][field])
            assert holds(published["metadata"][field], wanted), (
                name,
                field,
                published["metadata"][field],
                expected["metadata"][field],
            )
        assert holds(published["access"], expected["access"]), name
        for field, value in expected.get("custom_fields", {}).items():
            assert published["custom_fields"][field] == value, (name, field)


def vocabulary_names_dropped(value: Any) -> Any:
    """`value` without the names of entries that have a vocabulary id: RDM shows the
    vocabulary's name (an affiliation given as "CERN" with CERN's ROR is "European
    Organization for Nuclear Research")."""
    if isinstance(value, list):
        return [vocabulary_names_dropped(item) for item in value]
    if isinstance(value, dict):
        return {
            key: vocabulary_names_dropped(item)
            for key, item in value.items()
            if not (key == "name" and "id" in value)
        }
    return value


def test_a_5_mb_openaire_record_is_harvested_with_bounded_memory(rdm_openaire, custom_fields):
    """3,000 creators, 1,000 files and subjects and long abstracts in one ~5 MB record: the harvest's peak Python
    allocation and RSS growth stay within a few times its size; the transform alone too."""
    import threading
    import time
    import tracemalloc

    from oarepo_oaipmh_harvester.testing.corpus import Corpus
    from oarepo_oaipmh_harvester.testing.corpus_openaire import large_openaire_document
    from oarepo_oaipmh_harvester.testing.provider import served_document_key

    document = large_openaire_document(5_000_000)
    size = len(document.encode())
    record = harvested(document)
    started = time.perf_counter()
    data = OpenAIRERDMTransformer().transform(record)
    transform_seconds = time.perf_counter() - started
    # Linear work (0.7-0.9 s measured): a bound that only a quadratic rule would pass.
    assert transform_seconds < 10, transform_seconds
    tracemalloc.start()
    OpenAIRERDMTransformer().transform(record)
    _, transform_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    creators = len(data["metadata"]["creators"])

    corpus = Corpus()
    corpus.add(
        "oai:repository.example.org:large",
        {"title": ["large"], served_document_key(OPENAIRE_PREFIX): [document]},
    )
    page = 4096

    def rss() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * page

    peak_rss, stop = [rss()], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak_rss[0] = max(peak_rss[0], rss())
            stop.wait(0.01)

    with OAIPMHProvider(corpus, metadata_prefixes=(OPENAIRE_PREFIX,)) as provider:
        make_harvester(
            provider.base_url,
            target=RDM_TARGET,
            transformer=TRANSFORMER,
            metadata_prefix=OPENAIRE_PREFIX,
        )
        before = rss()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        tracemalloc.start()
        started = time.perf_counter()
        try:
            summary = run_harvest("test")
            harvest_seconds = time.perf_counter() - started  # with tracemalloc on
            _, python_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            stop.set()
            sampler.join()
    growth = peak_rss[0] - before
    print(
        f"\nOpenAIRE record {size} bytes, {creators} creators: transform {transform_seconds:.2f} s, "
        f"Python peak {transform_peak / size:.1f}x ({transform_peak} bytes); harvest into RDM "
        f"{harvest_seconds:.1f} s, Python peak {python_peak / size:.1f}x ({python_peak} bytes), "
        f"RSS growth {growth / size:.1f}x ({growth} bytes)"
    )
    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    row = tracking()["oai:repository.example.org:large"]
    assert not row.errors
    assert transform_peak < 20 * size
    assert python_peak < 40 * size
    # RSS is mostly RDM publishing and indexing 3,000 creators (the transform peaks at ~2x).
    assert growth < 60 * size


def test_misplaced_datacite_wrappers_of_real_exporters_are_read_with_warnings(
    rdm_openaire, transformer
):
    # PUB (Bielefeld, LibreCat) writes datacite:title and datacite:date without their
    # wrappers; IRIS (Milan) wraps the datacite:creator elements in a datacite:creator.
    document = (
        '<oaire:resource xmlns:oaire="http://namespace.openaire.eu/schema/oaire/" '
        'xmlns:datacite="http://datacite.org/schema/kernel-4" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<datacite:title xml:lang="ger">Reaktionsverhalten organometallischer Verbindungen'
        "</datacite:title>"
        "<datacite:creator><datacite:creator><datacite:creatorName>W.J. Sutherland"
        "</datacite:creatorName></datacite:creator><datacite:creator><datacite:creatorName>"
        "T. Amano</datacite:creatorName></datacite:creator></datacite:creator>"
        '<datacite:date dateType="Issued">2012</datacite:date>'
        '<oaire:resourceType resourceTypeGeneral="literature" '
        'uri="http://purl.org/coar/resource_type/c_1843">bi_dissertation</oaire:resourceType>'
        '<datacite:rights rightsURI="http://purl.org/coar/access_right/c_14cb">metadata only '
        "access</datacite:rights>"
        "</oaire:resource>"
    )
    data = transformer.transform(harvested(document))
    assert transformer.last_warnings == [
        "datacite:title outside datacite:titles (1): read as if in datacite:titles.",
        "datacite:date outside datacite:dates (1): read as if in datacite:dates.",
        "datacite:creator wrapping datacite:creator elements: read as datacite:creators.",
    ]
    record = publish(rdm_openaire, data)
    metadata = record["metadata"]
    assert metadata["title"] == "Reaktionsverhalten organometallischer Verbindungen"
    assert metadata["publication_date"] == "2012"
    assert [c["person_or_org"]["name"] for c in metadata["creators"]] == [
        "W.J. Sutherland",
        "T. Amano",
    ]
