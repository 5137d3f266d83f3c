"""The ``oai_dc_rdm`` transformer against the real RDM records service and vocabularies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from lxml import etree

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.transformers import (
    DC_NAMESPACE,
    TransformError,
    with_transform_warnings,
)
from oarepo_oaipmh_harvester.transformers.rdm.dublin_core import DublinCoreRDMTransformer
from oarepo_oaipmh_harvester.transformers.rdm.helpers import (
    bibliographic_to_terminology,
    comparable_url,
    doi_of,
    identifier_scheme,
    language_candidates,
    level0_date,
    person_or_org,
    years_in_text,
)

from .conftest import RDM_TARGET

TRANSFORMER = "oai_dc_rdm"
MISSING_DATE = "OAI_HARVESTER_RDM_MISSING_DATE"
SPRING = "sometime last spring"
OAI_DC = "http://www.openarchives.org/OAI/2.0/oai_dc/"

RICH: dict[str, list[str]] = {
    "title": ["Spectral lattice models", "Spektrale Gittermodelle", "Modèles spectraux"],
    "creator": ["Novák, Jan", "Müller, Anna", "CERN"],
    "contributor": ["Svoboda, Petr"],
    "date": ["2021-03-04T10:00:00Z", "2020"],
    "type": ["info:eu-repo/semantics/article", "info:eu-repo/semantics/publishedVersion"],
    "language": ["en", "ger"],
    "rights": [
        "http://creativecommons.org/licenses/by/4.0/legalcode",
        "info:eu-repo/semantics/openAccess",
        "Copyright the authors",
    ],
    "identifier": [
        "https://doi.org/10.1234/spectral.2021",
        "doi:10.1234/SPECTRAL.2021",
        "978-3-16-148410-0",
        "https://repository.example.org/records/42",
    ],
    "relation": ["10.5555/journal.issue.7", "see the journal issue"],
    "subject": ["lattice", "spectral analysis"],
    "description": ["We study spectral lattice models.", "Second description, in English."],
    "publisher": ["Example University Press"],
}


def dc_record(
    metadata: dict[str, list[str]],
    identifier: str = "oai:example.org:1",
    datestamp: str = "2024-01-01T00:00:00Z",
) -> OAIRecord:
    """An OAIRecord whose metadata is the ``oai_dc:dc`` element of `metadata`."""
    root = etree.Element(f"{{{OAI_DC}}}dc", nsmap={"oai_dc": OAI_DC, "dc": DC_NAMESPACE})
    for name, values in metadata.items():
        for value in values:
            etree.SubElement(root, f"{{{DC_NAMESPACE}}}{name}").text = value
    return OAIRecord(identifier, datestamp, False, (), metadata=root)


# -- helpers, no application -----------------------------------------------------------------
def test_level0_dates_are_the_ones_the_edtf_grammar_accepts():
    """level0_date checks the calendar itself (the grammar is slow): it must refuse exactly
    the dates python-edtf, which RDM validates with, refuses."""
    from edtf import parse_edtf
    from edtf.parser.edtf_exceptions import EDTFParseException

    def accepted_by_edtf(candidate: str) -> bool:
        try:
            parse_edtf(candidate)
        except EDTFParseException:
            return False
        return True

    days = ("00", "01", "28", "29", "30", "31", "32")
    dates = ["0000", "2020", "1999-00", "1999-13"]
    dates += [f"{year}-{month:02d}" for year in ("0000", "2019") for month in range(1, 13)]
    dates += [
        f"{year}-{month:02d}-{day}"
        for year in ("0000", "2019", "2020")
        for month in range(0, 14)
        for day in days
    ]
    intervals = ["2019-02-29/2020", "2020/2019-04-31", "2021-12-31/2020-01-01", "2020-00/2021"]
    for candidate in dates + intervals:
        assert (level0_date(candidate) == candidate) == accepted_by_edtf(candidate), candidate


def test_mapping_helpers():
    assert person_or_org("Novák, Jan") == {
        "type": "personal",
        "family_name": "Novák",
        "given_name": "Jan",
    }
    assert person_or_org("Plato,") == {"type": "personal", "family_name": "Plato"}
    assert person_or_org("CERN") == {"type": "organizational", "name": "CERN"}
    assert level0_date("2021-03-04T10:00:00Z") == "2021-03-04"
    assert level0_date("2019/2020") == "2019/2020"
    for refused in ("2020~", "ca. 1850", "2020-13", "unknown"):
        assert level0_date(refused) is None
    assert bibliographic_to_terminology("ger") == "deu"
    assert bibliographic_to_terminology("cze") == "ces"
    assert language_candidates("de-AT") == (None, "de")
    assert language_candidates("German") == ("deu", None)
    assert doi_of("doi:10.1234/ABC") == doi_of("https://doi.org/10.1234/ABC") == "10.1234/ABC"
    assert doi_of("978-3-16-148410-0") is None
    assert identifier_scheme("978-3-16-148410-0") == "isbn"
    assert identifier_scheme("https://example.org/x") == "url"
    assert identifier_scheme("see the journal issue") is None
    assert comparable_url("http://www.creativecommons.org/licenses/by/4.0/legalcode") == (
        comparable_url("https://creativecommons.org/licenses/by/4.0/")
    )
    assert with_transform_warnings(None, object()) is None


def test_a_number_is_no_pubmed_id_and_an_a_slash_b_no_handle_without_their_marker():
    """idutils takes any number for a PubMed id and any "a/b" for a Handle: a museum's
    inventory number 715977 was published as a PMID, an Arizona document number
    "azdocs: WBA 1.2:S 75/2011" as a Handle."""
    assert identifier_scheme("715977") is None
    assert identifier_scheme("azdocs: WBA 1.2:S 75/2011") is None
    assert (
        identifier_scheme("PMID:12345")
        == identifier_scheme("https://pubmed.ncbi.nlm.nih.gov/12345")
        == "pmid"
    )
    for handle in ("hdl:2286/R.I.28146", "http://hdl.handle.net/2286/R.I.28146", "2286/R.I.28"):
        assert identifier_scheme(handle) == "handle", handle
    assert identifier_scheme("03702693") == "issn"


def test_years_in_free_text():
    for text, years in [
        ("(1876)", "1876"),
        ("12-20-2007", "2007"),
        ("circa;1812;;", "1812"),
        ("Pusă în serviciu în 1914", "1914"),
        ("1936?-1938?", "1936/1938"),
        ("2014-2010", None),  # out of order: no guess
        ("10000-01-01", None),
        ("211-244 n. Chr.", None),
        ("1850, 1860, 1870", None),
    ]:
        assert years_in_text(text) == years, text


def test_repeated_values_are_kept_once_in_order():
    from oarepo_oaipmh_harvester.transformers.rdm.unique import unique_lists

    warnings: list[str] = []
    place = {"scheme": "geonames", "identifier": "2838632"}
    person = {
        "type": "personal",
        "family_name": "Novák",
        "identifiers": [
            {"scheme": "orcid", "identifier": "0000-0002-1825-0097"},
            {"scheme": "orcid", "identifier": "0000-0002-1825-0097"},
            {"scheme": "orcid", "identifier": "0000-0001-5109-3700"},
        ],
    }
    data = {
        "metadata": {
            "locations": {
                "features": [
                    {
                        "identifiers": [
                            place,
                            {"scheme": "wikidata", "identifier": "Q1194"},
                            dict(place),
                        ]
                    }
                ]
            },
            "identifiers": [
                {"scheme": "doi", "identifier": "10.1/A"},
                {"scheme": "doi", "identifier": "10.1/a"},
            ],
            "languages": [{"id": "deu"}, {"id": "eng"}, {"id": "deu"}],
            "creators": [{"person_or_org": person}, {"person_or_org": dict(person)}],
            "subjects": [{"subject": "Notgeld"}, {"subject": "Notgeld"}, {"id": "x"}],
        }
    }

    metadata = unique_lists(data, warnings.append)["metadata"]

    assert metadata["locations"]["features"][0]["identifiers"] == [
        place,
        {"scheme": "wikidata", "identifier": "Q1194"},
    ]
    assert metadata["identifiers"] == [{"scheme": "doi", "identifier": "10.1/A"}]
    assert metadata["languages"] == [{"id": "deu"}, {"id": "eng"}]
    assert len(metadata["creators"]) == 1
    assert metadata["creators"][0]["person_or_org"]["identifiers"] == [
        {"scheme": "orcid", "identifier": "0000-0002-1825-0097"}
    ]
    assert metadata["subjects"] == [{"subject": "Notgeld"}, {"id": "x"}]
    assert warnings == [
        "'Novák': orcid identifier '0000-0001-5109-3700' besides '0000-0002-1825-0097'; RDM "
        "keeps one per scheme; dropped."
    ]


# -- against the RDM app ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def app_config(app_config):
    """External DOIs on (RDM drops the doi scheme unless DataCite or Crossref is enabled);
    the transformer registered by configuration (this venv's entry points are another
    worktree's)."""
    from oaiharvest_test_support.rdm import rdm_config

    pids = rdm_config(external_dois=True)["RDM_PERSISTENT_IDENTIFIERS"]
    app_config["RDM_PERSISTENT_IDENTIFIERS"] = pids
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: DublinCoreRDMTransformer,
    }
    return app_config


@pytest.fixture()
def rdm_dc(rdm):
    return rdm


@pytest.fixture()
def transformer(rdm_dc) -> DublinCoreRDMTransformer:
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    return current_oai_harvester.transformers.get(TRANSFORMER)


def publish(service, data: dict[str, Any]) -> dict[str, Any]:
    """Create a draft, insist on no errors, publish, return the published record."""
    draft = service.create(system_identity, data)
    assert draft.errors == [], draft.errors
    return service.publish(system_identity, draft.id).to_dict()


def test_rich_record_is_published_with_every_value(rdm_dc, transformer):
    data = transformer.transform(dc_record(RICH))
    assert transformer.last_warnings == [
        "dc:relation 'see the journal issue': scheme unknown; dropped."
    ]

    record = publish(rdm_dc, data)

    metadata = record["metadata"]
    assert metadata["title"] == "Spectral lattice models"
    assert [(t["title"], t["type"]["id"]) for t in metadata["additional_titles"]] == [
        ("Spektrale Gittermodelle", "alternative-title"),
        ("Modèles spectraux", "alternative-title"),
    ]
    assert [c["person_or_org"] for c in metadata["creators"]] == [
        {"type": "personal", "family_name": "Novák", "given_name": "Jan", "name": "Novák, Jan"},
        {"type": "personal", "family_name": "Müller", "given_name": "Anna", "name": "Müller, Anna"},
        {"type": "organizational", "name": "CERN"},
    ]
    assert metadata["contributors"][0]["role"]["id"] == "other"
    assert metadata["contributors"][0]["person_or_org"]["family_name"] == "Svoboda"
    assert metadata["publication_date"] == "2021-03-04"
    assert [(d["date"], d["type"]["id"]) for d in metadata["dates"]] == [("2020", "other")]
    assert metadata["resource_type"]["id"] == "publication-article"
    assert [lang["id"] for lang in metadata["languages"]] == ["eng", "deu"]
    assert [r.get("id") for r in metadata["rights"]] == ["cc-by-4.0", None]
    assert metadata["rights"][1]["title"] == {"en": "Copyright the authors"}
    assert record["access"]["record"] == "public" and record["access"]["files"] == "public"
    assert record["files"]["enabled"] is False
    assert record["pids"]["doi"] == {"identifier": "10.1234/spectral.2021", "provider": "external"}
    assert metadata["identifiers"] == [
        {"identifier": "978-3-16-148410-0", "scheme": "isbn"},
        {"identifier": "https://repository.example.org/records/42", "scheme": "url"},
    ]
    assert [
        (r["identifier"], r["scheme"], r["relation_type"]["id"])
        for r in metadata["related_identifiers"]
    ] == [("10.5555/journal.issue.7", "doi", "other")]
    assert [s["subject"] for s in metadata["subjects"]] == ["lattice", "spectral analysis"]
    assert metadata["description"] == "We study spectral lattice models."
    assert [(d["description"], d["type"]["id"]) for d in metadata["additional_descriptions"]] == [
        ("Second description, in English.", "other")
    ]
    assert metadata["publisher"] == "Example University Press"


def test_unmappable_values_are_warnings_on_a_valid_record(rdm_dc, transformer):
    data = transformer.transform(
        dc_record(
            {
                "title": ["Flyer of the 1968 spring"],
                "creator": ["Anonymous"],
                "date": ["ca. 1968", "1968"],
                "type": ["Flugblatt"],
                "language": ["xx", "zzz", "cs"],
                "rights": ["info:eu-repo/semantics/closedAccess"],
                "identifier": ["local-0042"],
                "format": ["application/pdf"],
            }
        )
    )
    assert transformer.last_warnings == [
        "dc:date 'ca. 1968': not an EDTF level 0 date; dropped.",
        "dc:type 'Flugblatt': no matching resource type; using the default 'publication'.",
        "dc:language 'xx': not in the languages vocabulary; dropped.",
        "dc:language 'zzz': not in the languages vocabulary; dropped.",
        "dc:identifier 'local-0042': scheme unknown; dropped.",
        "dc:format 'application/pdf': no RDM field is mapped; dropped.",
    ]

    record = publish(rdm_dc, data)

    assert record["metadata"]["resource_type"]["id"] == "publication"
    assert record["metadata"]["publication_date"] == "1968"
    assert [lang["id"] for lang in record["metadata"]["languages"]] == ["ces"]
    assert record["access"]["files"] == "restricted" and record["access"]["record"] == "public"
    assert "pids" not in data and "identifiers" not in record["metadata"]


def test_types_by_keyword_and_an_embargo(rdm_dc, transformer):
    data = transformer.transform(
        dc_record(
            {
                "title": ["Measurements"],
                "creator": ["Lab, The"],
                "date": ["2022", "info:eu-repo/date/embargoEnd/2999-01-01"],
                "type": ["info:eu-repo/semantics/other", "Dataset"],
                "rights": ["info:eu-repo/semantics/embargoedAccess"],
            }
        )
    )
    assert transformer.last_warnings == []

    record = publish(rdm_dc, data)

    assert record["metadata"]["resource_type"]["id"] == "dataset"
    assert record["access"]["embargo"] == {"active": True, "until": "2999-01-01", "reason": None}
    assert record["access"]["files"] == "restricted"


def test_without_external_dois_the_doi_is_an_identifier(rdm_dc, app, monkeypatch):
    """RDM's default config: no doi scheme unless DataCite or Crossref is enabled."""
    from invenio_rdm_records import config as rdm_config

    monkeypatch.setitem(
        app.config, "RDM_PERSISTENT_IDENTIFIERS", rdm_config.RDM_PERSISTENT_IDENTIFIERS
    )
    transformer = DublinCoreRDMTransformer()
    data = transformer.transform(dc_record(RICH))
    assert "pids" not in data

    record = publish(rdm_dc, data)

    assert "doi" not in record["pids"]
    assert [i for i in record["metadata"]["identifiers"] if i["scheme"] == "doi"] == [
        {"identifier": "10.1234/spectral.2021", "scheme": "doi"}
    ]


def test_a_license_given_by_title_and_url_is_one_license(rdm_dc, transformer):
    """RDM's own Dublin Core serializer writes a license as its title and its URL."""
    rights = [
        "Creative Commons Attribution 4.0 International",
        "https://creativecommons.org/licenses/by/4.0/legalcode",
        "Copyright the authors",
    ]
    data = transformer.transform(dc_record({**RICH, "rights": rights}))
    assert data["metadata"]["rights"] == [
        {"id": "cc-by-4.0"},
        {"title": {"en": "Copyright the authors"}},
    ]


def test_a_version_is_not_a_type(rdm_dc, transformer):
    data = transformer.transform(
        dc_record({**RICH, "type": ["info:eu-repo/semantics/acceptedVersion"]})
    )
    assert data["metadata"]["resource_type"] == {"id": "publication"}
    assert "No dc:type names a resource type; using the default 'publication'." in (
        transformer.last_warnings
    )


def test_a_record_without_a_title_is_a_transform_error(rdm_dc, transformer):
    metadata = {k: v for k, v in RICH.items() if k != "title"}
    with pytest.raises(TransformError, match="no dc:title"):
        transformer.transform(dc_record(metadata))


def test_a_thesis_naming_its_advisers_as_contributors_publishes_with_them_as_creators(
    rdm_dc, transformer
):
    """oai_dc_rdm's default missing_creator is ``contributors``: the record is kept, its
    contributors stand in (they stay contributors too, with their role), and it says so."""
    thesis = {
        **{k: v for k, v in RICH.items() if k not in ("creator", "contributor")},
        "contributor": ["Svoboda, Petr", "Dvořák, Eva"],
    }

    data = transformer.transform(dc_record(thesis))
    record = publish(rdm_dc, data)

    assert [c["person_or_org"]["name"] for c in record["metadata"]["creators"]] == [
        "Svoboda, Petr",
        "Dvořák, Eva",
    ]
    assert [c["role"]["id"] for c in record["metadata"]["contributors"]] == ["other", "other"]
    assert (
        "Creators: no dc:creator; using its contributors as creators ('Svoboda, Petr', "
        "'Dvořák, Eva'; missing_creator contributors)."
    ) in transformer.last_warnings


@pytest.mark.parametrize(
    ("option", "metadata", "creators", "warning"),
    [
        (
            None,  # the default: contributors, else the publisher
            {"publisher": ["The Daily Illini"]},
            [{"type": "organizational", "name": "The Daily Illini"}],
            "Creators: no dc:creator; using its holder or publisher as creators "
            "('The Daily Illini'; missing_creator contributors).",
        ),
        (
            "holder",  # the publisher first, though a contributor is named
            {"publisher": ["Example University Press"], "contributor": ["Svoboda, Petr"]},
            [{"type": "organizational", "name": "Example University Press"}],
            "Creators: no dc:creator; using its holder or publisher as creators "
            "('Example University Press'; missing_creator holder).",
        ),
        (
            None,  # nobody named at all
            {},
            [{"type": "organizational", "name": "Unknown"}],
            "Creators: no dc:creator and no contributor, publisher or holder; using 'Unknown' "
            "(missing_creator contributors).",
        ),
        (
            "Anonymous",  # a fixed name, whatever the record names
            {"contributor": ["Svoboda, Petr"]},
            [{"type": "organizational", "name": "Anonymous"}],
            "Creators: no dc:creator; using 'Anonymous' (missing_creator Anonymous).",
        ),
    ],
)
def test_what_stands_in_for_a_missing_creator(rdm_dc, option, metadata, creators, warning):
    transformer = DublinCoreRDMTransformer(missing_creator=option)
    base = {"title": ["A student newspaper"], "date": ["1921-05-04"]}

    data = transformer.transform(dc_record({**base, **metadata}))

    assert [c["person_or_org"] for c in data["metadata"]["creators"]] == creators
    assert warning in transformer.last_warnings
    publish(rdm_dc, data)


def test_missing_creator_fail_by_option_or_configuration(rdm_dc, app, monkeypatch):
    """The old behaviour; the option wins over OAI_HARVESTER_RDM_MISSING_CREATOR, which is
    read by the transformer's registered name."""
    advised = dc_record({"title": ["A thesis"], "contributor": ["Svoboda, Petr"]})
    with pytest.raises(TransformError, match="has no dc:creator"):
        DublinCoreRDMTransformer(missing_creator="fail").transform(advised)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RDM_MISSING_CREATOR", {"oai_dc_rdm": "fail"})
    with pytest.raises(TransformError, match="has no dc:creator"):
        DublinCoreRDMTransformer().transform(advised)
    kept = DublinCoreRDMTransformer(missing_creator="Contributors").transform(advised)
    assert kept["metadata"]["creators"][0]["person_or_org"]["family_name"] == "Svoboda"
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RDM_MISSING_CREATOR", {})
    with pytest.raises(TransformError, match="has no dc:creator"):  # not configured: fail
        DublinCoreRDMTransformer().transform(advised)


def test_repeated_values_are_kept_once_and_the_record_publishes(rdm_dc, transformer):
    """RDM refuses a record whose identifiers or languages repeat ("non-unique elements")."""
    repeated = {
        **RICH,
        "identifier": ["978-3-16-148410-0", "978-3-16-148410-0", "urn:nbn:de:101:1-2013"],
        "language": ["en", "eng", "en"],
        "relation": ["10.5555/journal.issue.7", "https://doi.org/10.5555/JOURNAL.ISSUE.7"],
        "subject": ["lattice", "lattice", "spectra"],
    }

    data = transformer.transform(dc_record(repeated))
    record = publish(rdm_dc, data)

    metadata = record["metadata"]
    assert [i["identifier"] for i in metadata["identifiers"]] == [
        "978-3-16-148410-0",
        "urn:nbn:de:101:1-2013",
    ]
    assert metadata["languages"] == [{"id": "eng", "title": {"en": "English"}}]
    assert [r["identifier"] for r in metadata["related_identifiers"]] == ["10.5555/journal.issue.7"]
    assert [s["subject"] for s in metadata["subjects"]] == ["lattice", "spectra"]


def test_an_unusable_date_gives_way_to_the_year_of_the_datestamp(rdm_dc, transformer):
    """RDM needs a publication date; one it cannot parse does not lose the record."""
    data = transformer.transform(
        dc_record({**RICH, "date": [SPRING]}, datestamp="2019-07-14T08:00:00Z")
    )
    assert data["metadata"]["publication_date"] == "2019"
    assert transformer.last_warnings[:2] == [
        "dc:date 'sometime last spring': not an EDTF level 0 date; dropped.",
        "Publication date: no EDTF level 0 date in dc:date ('sometime last spring'); "
        "using 2019, the year of the record's datestamp 2019-07-14T08:00:00Z.",
    ]
    assert publish(rdm_dc, data)["metadata"]["publication_date"] == "2019"

    undated = {k: v for k, v in RICH.items() if k != "date"}
    data = transformer.transform(dc_record(undated, datestamp="2018-02-03"))
    assert data["metadata"]["publication_date"] == "2018"
    assert transformer.last_warnings[0] == (
        "Publication date: no dc:date; using 2018, the year of the record's datestamp 2018-02-03."
    )
    # A datestamp with no year to take (the protocol layer keeps it as sent) stands in for
    # nothing: the record fails as it would with "fail".
    with pytest.raises(TransformError, match="no dc:date in EDTF form"):
        transformer.transform(dc_record({**RICH, "date": [SPRING]}, datestamp="last spring"))


def test_missing_date_fail_makes_an_undated_record_a_transform_error(rdm_dc, app, monkeypatch):
    """The old behaviour, by configuration or by option; an option wins over the config."""
    spring = dc_record({**RICH, "date": [SPRING]})
    monkeypatch.setitem(app.config, MISSING_DATE, "fail")
    with pytest.raises(TransformError, match="no dc:date in EDTF form .*'sometime last spring'"):
        DublinCoreRDMTransformer().transform(spring)
    kept = DublinCoreRDMTransformer(missing_date="datestamp-year").transform(spring)
    assert kept["metadata"]["publication_date"] == "2024"

    monkeypatch.setitem(app.config, MISSING_DATE, "datestamp-year")
    with pytest.raises(TransformError, match="no dc:date in EDTF form"):
        DublinCoreRDMTransformer(missing_date="fail").transform(spring)
    with pytest.raises(ValueError, match="OAI_HARVESTER_RDM_MISSING_DATE .* 'never'; expected"):
        DublinCoreRDMTransformer(missing_date="never")


def test_each_run_gets_its_own_transformer_and_cache(rdm_dc, transformer):
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer.transform(dc_record(RICH))
    cached = dict(transformer.vocabularies._entries)
    assert ("languages", "deu") in cached
    transformer.transform(dc_record(RICH))
    assert transformer.vocabularies._entries == cached  # no new look-ups for the same values

    fresh = current_oai_harvester.transformers.get(TRANSFORMER)
    assert fresh is not transformer and fresh.vocabularies._entries == {}


# -- a harvest through the writer ------------------------------------------------------------
@pytest.fixture()
def corpus() -> Corpus:
    corpus = Corpus()
    corpus.add("oai:example.org:rich", RICH, datestamp=datetime(2024, 1, 1, tzinfo=UTC))
    corpus.add(
        "oai:example.org:flyer",
        {"title": ["A flyer"], "creator": ["Anonymous"], "date": ["1968"], "type": ["Flugblatt"]},
        datestamp=datetime(2024, 1, 2, tzinfo=UTC),
    )
    corpus.add(
        "oai:example.org:undated",
        {"title": ["Undated"], "creator": ["Anonymous"], "date": [SPRING]},
        datestamp=datetime(2023, 11, 5, tzinfo=UTC),
    )
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    return corpus


def test_harvest_publishes_every_record_the_undated_one_with_its_datestamps_year(rdm_dc, provider):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (3, 0)
    db.session.expire_all()
    rows = {row.oai_identifier: row for row in db.session.scalars(db.select(OAIHarvestedRecord))}
    undated = rows["oai:example.org:undated"]
    assert not undated.errors
    published = rdm_dc.read(system_identity, undated.local_pid).to_dict()
    assert published["metadata"]["publication_date"] == "2023"  # datestamp 2023-11-05
    assert undated.warnings[:2] == [
        "dc:date 'sometime last spring': not an EDTF level 0 date; dropped.",
        "Publication date: no EDTF level 0 date in dc:date ('sometime last spring'); "
        "using 2023, the year of the record's datestamp 2023-11-05T00:00:00Z.",
    ]
    flyer = rdm_dc.read(system_identity, rows["oai:example.org:flyer"].local_pid).to_dict()
    assert flyer["metadata"]["resource_type"]["id"] == "publication"
    # What could not be mapped is a warning on the row, not an error.
    assert not rows["oai:example.org:flyer"].errors
    assert any("Flugblatt" in warning for warning in rows["oai:example.org:flyer"].warnings)
    rich = rdm_dc.read(system_identity, rows["oai:example.org:rich"].local_pid).to_dict()
    assert rich["pids"]["doi"]["identifier"] == "10.1234/spectral.2021"


def test_with_missing_date_fail_the_undated_record_fails_as_before(
    rdm_dc, provider, app, monkeypatch
):
    monkeypatch.setitem(app.config, MISSING_DATE, "fail")
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (2, 1)
    db.session.expire_all()
    row = db.session.get(OAIHarvestedRecord, ("test", "oai:example.org:undated"))
    assert row.local_pid is None
    assert row.errors[0] == (
        "TransformError: Record oai:example.org:undated has no dc:date in EDTF form (RDM needs "
        "a publication date); found ['sometime last spring']."
    )


def test_a_changed_source_record_keeps_its_external_doi(rdm_dc, provider, corpus):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)
    run_harvest("test")
    corpus.advance_clock(minutes=5)
    corpus.update("oai:example.org:rich", metadata={**RICH, "title": ["Spectral models, 2nd ed."]})

    summary = run_harvest("test", since_source=SinceSource.WATERMARK)

    assert (summary.counts.updated, summary.counts.failed) == (1, 0)
    db.session.expire_all()
    row = db.session.get(OAIHarvestedRecord, ("test", "oai:example.org:rich"))
    record = rdm_dc.read(system_identity, row.local_pid).to_dict()
    assert record["metadata"]["title"] == "Spectral models, 2nd ed."
    assert record["pids"]["doi"] == {"identifier": "10.1234/spectral.2021", "provider": "external"}


def test_the_harvesters_missing_creator_reaches_its_transformer(rdm_dc):
    """A harvester's own missing_creator wins over the transformer's default: ``fail`` fails
    the adviser-only thesis; a fixed name, set later, publishes it at the next full run."""
    from oarepo_oaipmh_harvester.proxies import current_harvester_service
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    corpus = Corpus()
    corpus.add(
        "oai:example.org:thesis",
        {"title": ["A thesis"], "contributor": ["Svoboda, Petr"], "date": ["2020"]},
        datestamp=datetime(2024, 1, 1, tzinfo=UTC),
    )
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    with OAIPMHProvider(corpus) as provider:
        make_harvester(
            provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, missing_creator="fail"
        )
        assert run_harvest("test").counts.failed == 1
        current_harvester_service.update(
            system_identity, "test", {"missing_creator": "Anonymous"}, check=False
        )
        summary = run_harvest("test", full=True)

    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    db.session.expire_all()
    row = db.session.get(OAIHarvestedRecord, ("test", "oai:example.org:thesis"))
    creators = rdm_dc.read(system_identity, row.local_pid).to_dict()["metadata"]["creators"]
    assert [c["person_or_org"]["name"] for c in creators] == ["Anonymous"]
    assert "Creators: no dc:creator; using 'Anonymous' (missing_creator Anonymous)." in (
        row.warnings
    )
