"""The files of a harvested record (transformers/files.py): the contract a transformer fills
beside its data, and what the three RDM transformers find in their formats - on small inline
records and on the real records of tests/rdm/data/real (MARC, OpenAIRE, LIDO)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oarepo_oaipmh_harvester.testing.recorded import recorded_documents
from oarepo_oaipmh_harvester.transformers import (
    FileAccess,
    FileReference,
    TransformerChain,
    file_reference,
    transform_files,
)
from oarepo_oaipmh_harvester.transformers.files import (
    checked_file_reference,
    parse_checksum,
    parse_size,
    safe_name,
)

REAL = Path(__file__).parent / "data" / "real"
MD5 = "0123456789abcdef0123456789abcdef"
SHA256 = "a" * 64


# -- the contract (no application) -----------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "etc_passwd"),
        ("a/b\\c.txt", "a_b_c.txt"),
        ("..", "file"),
        ("", "file"),
        ("   ", "file"),
        ("a..b.pdf", "a.b.pdf"),
        (".hidden", "hidden"),
        ("tab\there.pdf", "tab_here.pdf"),
        ("x" * 300 + ".pdf", "x" * 196 + ".pdf"),
    ],
)
def test_names_are_made_safe(given, expected):
    assert safe_name(given) == expected


def test_names_are_unique_within_the_record():
    taken: set[str] = set()
    names = [
        file_reference(url, taken=taken).name
        for url in (
            "https://example.org/a.pdf",
            "https://example.org/other/a.pdf",
            "https://example.org/third/a.pdf",
            "https://example.org/readme",
            "https://example.org/x/readme",
        )
    ]
    assert names == ["a.pdf", "a-2.pdf", "a-3.pdf", "readme", "readme-2"]
    assert taken == set(names)
    # A given name is made safe and unique as well.
    assert file_reference("https://example.org/1", name="../a.pdf", taken=taken).name == "a-4.pdf"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://example.org/files/Full%20manuscript.pdf", "Full manuscript.pdf"),
        ("https://example.org/files/report.pdf?download=1#page=2", "report.pdf"),
        ("https://rdm.example.org/api/records/abc-12/files/data.csv/content", "data.csv"),
        ("https://example.org/%2E%2E%2Fsecret.txt", "secret.txt"),
        (
            "https://media.example.org/id/1993-522_%23_001/full/max/0/default.jpg",
            "1993-522_#_001.jpg",
        ),
        ("https://example.org/", "file"),
        ("https://example.org/a b.pdf", "a b.pdf"),
    ],
)
def test_a_name_comes_from_the_last_path_segment_of_the_url(url, name):
    assert file_reference(url, taken=set()).name == name


def test_a_name_without_extension_gets_the_one_of_its_mime_type():
    found = file_reference(
        "http://europepmc.org/articles/PMC5574022?pdf=render",
        mimetype="application/pdf",
        taken=set(),
    )
    assert (found.name, found.mimetype) == ("PMC5574022.pdf", "application/pdf")
    assert file_reference("https://e.org/a.txt", mimetype="PDF", taken=set()).mimetype == (
        "application/pdf"
    )
    assert file_reference("https://e.org/a", mimetype="nonsense", taken=set()).mimetype is None


@pytest.mark.parametrize(
    "url", ["ftp://example.org/a.pdf", "mailto:a@example.org", "a.pdf", "", "https://", "urn:x:y"]
)
def test_only_http_urls_are_files(url):
    assert file_reference(url, taken=set()) is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (f"md5:{MD5}", f"md5:{MD5}"),
        (f"MD5:{MD5.upper()}", f"md5:{MD5}"),
        (f"sha-256:{SHA256}", f"sha256:{SHA256}"),
        (f"SHA256={SHA256}", f"sha256:{SHA256}"),
        (f"{{md5}}{MD5}", f"md5:{MD5}"),
        (f"md5 {MD5}", f"md5:{MD5}"),
        (MD5, f"md5:{MD5}"),
        ("b" * 40, "sha1:" + "b" * 40),
        ("c" * 128, "sha512:" + "c" * 128),
        ("md5:abc", None),
        (f"sha256:{MD5}", None),
        (f"crc32:{MD5}", None),
        ("not a checksum", None),
        ("abc", None),
        (None, None),
    ],
)
def test_checksums_are_read_leniently(given, expected):
    assert parse_checksum(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (1234, 1234),
        ("1234", 1234),
        (" 1234 bytes ", 1234),
        ("1 234 B", 1234),
        ("12B", 12),
        ("1.2 MB", None),  # rounded: a size serves to verify the fetched file
        ("5 KB", None),
        ("1,234", None),  # a thousands separator or a decimal comma
        ("-1", None),
        (-1, None),
        (True, None),
        ("", None),
        (None, None),
    ],
)
def test_sizes_are_exact_byte_counts(given, expected):
    assert parse_size(given) == expected


def test_a_reference_round_trips_through_json():
    reference = file_reference(
        "https://example.org/thesis.pdf",
        size="1234",
        checksum=f"MD5:{MD5}",
        mimetype="application/pdf",
        access=FileAccess.EMBARGOED,
        embargo_until="2999-01-01",
        taken=set(),
    )
    assert reference.as_json() == {
        "url": "https://example.org/thesis.pdf",
        "name": "thesis.pdf",
        "size": 1234,
        "checksum": f"md5:{MD5}",
        "mimetype": "application/pdf",
        "access": "embargoed",
        "embargo_until": "2999-01-01",
    }
    assert FileReference.from_json(reference.as_json()) == reference
    bare = FileReference(url="https://example.org/a", name="a")
    assert bare.as_json() == {"url": "https://example.org/a", "name": "a", "access": "open"}
    assert FileReference.from_json(bare.as_json()) == bare
    with pytest.raises(ValueError, match="url"):
        FileReference.from_json({"name": "a"})


def test_unusable_values_are_warnings_and_the_file_is_kept():
    warnings: list[str] = []
    reference = checked_file_reference(
        "856 $u",
        "https://example.org/a.pdf",
        warnings.append,
        size="1.2 MB",
        checksum="md5:abc",
        taken=set(),
    )
    assert (reference.name, reference.size, reference.checksum) == ("a.pdf", None, None)
    assert checked_file_reference("856 $u", "ftp://e.org/b", warnings.append, taken=set()) is None
    assert warnings == [
        "856 $u 'https://example.org/a.pdf': size '1.2 MB', checksum 'md5:abc' not usable; the "
        "file is kept without.",
        "856 $u 'ftp://e.org/b': not a http(s) URL; no file fetched.",
    ]


class _Step:
    def __init__(self, files: list[FileReference] | None) -> None:
        self.files = files

    def transform(self, record: Any) -> dict[str, Any]:
        self.last_files = self.files
        return {}

    def adjust(self, record: Any, data: dict[str, Any]) -> dict[str, Any]:
        if self.files is not None:
            self.last_files = self.files
        return data


def test_a_chain_has_the_files_of_its_first_step_unless_a_later_step_sets_its_own():
    first = [FileReference(url="https://e.org/a", name="a")]
    later = [FileReference(url="https://e.org/b", name="b")]
    assert transform_files(object()) == []
    chain = TransformerChain("c", [_Step(first), _Step(None)])
    chain.transform(None)
    assert transform_files(chain) == first
    chain = TransformerChain("c", [_Step(first), _Step(later), _Step(None)])
    chain.transform(None)
    assert transform_files(chain) == later
    chain = TransformerChain("c", [_Step(first), _Step([])])
    chain.transform(None)
    assert transform_files(chain) == []


# -- the RDM transformers ------------------------------------------------------------------------
pytest.importorskip("invenio_rdm_records")

from oarepo_oaipmh_harvester.testing.corpus import lido_document  # noqa: E402
from oarepo_oaipmh_harvester.testing.corpus_marc import marcxml_document  # noqa: E402
from oarepo_oaipmh_harvester.testing.corpus_openaire import openaire_document  # noqa: E402
from oarepo_oaipmh_harvester.transformers.rdm.lido import LIDORDMTransformer  # noqa: E402
from oarepo_oaipmh_harvester.transformers.rdm.marcxml import (  # noqa: E402
    MARCXMLRDMTransformer,
)
from oarepo_oaipmh_harvester.transformers.rdm.openaire import (  # noqa: E402
    OpenAIRERDMTransformer,
)

from .test_datacite_to_rdm import harvested  # noqa: E402


@pytest.fixture()
def vocabularies(rdm):
    """RDM's own vocabulary entries: the relation types the links keep, a few resource
    types (a transformer's other warnings are not this module's subject)."""
    return rdm


def marc(*fields) -> Any:
    head = [("245", "00", [("a", "A record with files")]), ("100", "1 ", [("a", "Doe, Jane")])]
    head.append(("260", "  ", [("c", "2021")]))
    return harvested(marcxml_document([*head, *fields], collection=False))


def urls(found: list[FileReference]) -> list[str]:
    return [f.url for f in found]


def test_marc_856_files_and_links(vocabularies):
    transformer = MARCXMLRDMTransformer()
    data = transformer.transform(
        marc(
            (
                "856",
                "40",
                [
                    ("u", "https://repo.example.org/1/thesis.pdf"),
                    ("s", "1.2 MB"),
                    ("q", "application/pdf"),
                    ("y", "Full text"),
                ],
            ),
            (
                "856",
                "4 ",
                [
                    ("u", "https://rdm.example.org/records/1/files/data.csv/content"),
                    ("s", "2048"),
                    ("z", f"sha256:{SHA256}"),
                ],
            ),
            ("856", "4 ", [("u", "https://repo.example.org/dl/42"), ("f", "scan 1.tif")]),
            ("856", "40", [("u", "https://doi.org/10.1234/x")]),
            ("856", "40", [("u", "https://repo.example.org/record/1.html")]),
            ("856", "42", [("u", "https://repo.example.org/toc.pdf")]),
            ("856", "41", [("u", "https://repo.example.org/landing")]),
            ("856", "40", [("u", "ftp://repo.example.org/1/thesis.pdf")]),
        )
    )
    assert transformer.last_files == [
        FileReference(
            url="https://repo.example.org/1/thesis.pdf",
            name="thesis.pdf",
            mimetype="application/pdf",
        ),
        FileReference(
            url="https://rdm.example.org/records/1/files/data.csv/content",
            name="data.csv",
            size=2048,
            checksum=f"sha256:{SHA256}",
        ),
        FileReference(
            url="https://repo.example.org/dl/42", name="scan 1.tif", mimetype=None, size=None
        ),
    ]
    assert [w for w in transformer.last_warnings if w.startswith("856")] == [
        "856 $y 'Full text': a link's text has no RDM field; dropped.",
        "856 $u 'https://repo.example.org/1/thesis.pdf': size '1.2 MB' not usable; the file is "
        "kept without.",
        "856 $u 'ftp://repo.example.org/1/thesis.pdf': not a http(s) URL; no file fetched.",
    ]
    # Every link stays a related identifier, as before.
    related = [r["identifier"] for r in data["metadata"]["related_identifiers"]]
    assert "https://doi.org/10.1234/x" in related
    assert "https://repo.example.org/toc.pdf" in related
    # The next record starts without files.
    transformer.transform(marc())
    assert transformer.last_files == []


@pytest.mark.parametrize(
    ("fields", "access", "until"),
    [
        ([("540", "  ", [("a", "info:eu-repo/semantics/openAccess")])], FileAccess.OPEN, None),
        ([("506", "1 ", [("a", "Members only.")])], FileAccess.RESTRICTED, None),
        (
            [("269", "  ", [("c", "info:eu-repo/date/embargoEnd/2999-12-31")])],
            FileAccess.EMBARGOED,
            "2999-12-31",
        ),
    ],
)
def test_marc_record_access_decides_the_files_access(vocabularies, fields, access, until):
    transformer = MARCXMLRDMTransformer()
    transformer.transform(marc(*fields, ("856", "40", [("u", "https://repo.example.org/a.pdf")])))
    [found] = transformer.last_files
    assert (found.access, found.embargo_until) == (access, until)


def test_every_oaire_file_is_a_file_with_its_own_access(vocabularies):
    transformer = OpenAIRERDMTransformer()
    document = openaire_document(
        "9",
        access=("c_f1cf", "embargoed access"),
        available="2999-01-01",
        files=(
            ("https://repository.example.org/9/article.pdf", "application/pdf", "fulltext", ""),
            ("https://repository.example.org/9/data.csv", "text/csv", "dataset", "c_abf2"),
            ("https://repository.example.org/9/raw", "application/zip", "dataset", "c_16ec"),
            ("https://repository.example.org/9/notes.txt", "text/plain", "other", "c_14cb"),
            ("ftp://repository.example.org/9/old.pdf", "application/pdf", "other", "c_abf2"),
            ("not a link", "text/plain", "other", "c_abf2"),
        ),
    )
    transformer.transform(harvested(document))
    assert [(f.name, f.mimetype, f.access, f.embargo_until) for f in transformer.last_files] == [
        ("article.pdf", "application/pdf", FileAccess.EMBARGOED, "2999-01-01"),
        ("data.csv", "text/csv", FileAccess.OPEN, None),
        ("raw.zip", "application/zip", FileAccess.RESTRICTED, None),
        ("notes.txt", "text/plain", FileAccess.METADATA_ONLY, None),
    ]
    assert [w for w in transformer.last_warnings if "not a" in w] == [
        "file 'ftp://repository.example.org/9/old.pdf': not a http(s) URL; no file fetched.",
        "file 'not a link': not a URL; dropped.",
    ]


def resource_set(*representations: tuple[str, str, str], rights: str = "") -> str:
    """A LIDO resourceSet of (type, format, link) representations and a rights term."""
    inner = "".join(
        f'<lido:resourceRepresentation lido:type="{kind}"><lido:linkResource '
        f'lido:formatResource="{fmt}">{link}</lido:linkResource></lido:resourceRepresentation>'
        for kind, fmt, link in representations
    )
    if rights:
        inner += (
            "<lido:rightsResource><lido:rightsType><lido:term>"
            f"{rights}</lido:term></lido:rightsType></lido:rightsResource>"
        )
    return f"<lido:resourceSet>{inner}</lido:resourceSet>"


def test_lido_resource_sets_give_their_best_representation(vocabularies):
    transformer = LIDORDMTransformer()
    document = lido_document(
        "9",
        resources=(
            resource_set(
                ("image_thumb", "image/jpeg", "https://img.example.org/t/1.jpg"),
                ("image_master", "image/tiff", "https://img.example.org/m/1.tif"),
                ("image_preview", "image/jpeg", "https://img.example.org/p/1.jpg"),
            ),
            resource_set(
                ("image_thumb", "jpg", "https://img.example.org/t/2"),
                rights="Restricted access",
            ),
            resource_set(
                ("masterfile", "image/tiff", "2.tif"),
                ("image_preview", "image/jpeg", "https://img.example.org/p/1.jpg"),
            ),
            resource_set(("image_master", "", "ftp://img.example.org/m/4.tif")),
        ),
    )
    transformer.transform(harvested(document))
    assert transformer.last_files == [
        FileReference(url="https://img.example.org/m/1.tif", name="1.tif", mimetype="image/tiff"),
        FileReference(
            url="https://img.example.org/t/2",
            name="2.jpg",
            mimetype="image/jpeg",
            access=FileAccess.RESTRICTED,
        ),
        FileReference(url="https://img.example.org/p/1.jpg", name="1.jpg", mimetype="image/jpeg"),
    ]
    assert "resource 'ftp://img.example.org/m/4.tif': not a http(s) URL; no file fetched." in (
        transformer.last_warnings
    )


# -- the real corpora ----------------------------------------------------------------------------
def real_files(transformer: Any, folder: str) -> dict[str, list[FileReference]]:
    """The files of every record in data/real/`folder`, by its identifier (recorded.py)."""
    found = {}
    for identifier, document in recorded_documents(REAL / folder).items():
        transformer.transform(harvested(document, identifier=identifier))
        found[identifier] = transformer.last_files
    return found


def test_real_openaire_records_name_the_files_their_xml_has(vocabularies):
    found = real_files(OpenAIRERDMTransformer(), "openaire")
    assert len(found) == 8
    with_files = {k.split(":")[1]: v for k, v in found.items() if v}
    # Every http oaire:file (the mock sample's is no URL; three records have none).
    assert {
        k: [(f.url, f.name, f.mimetype, f.access) for f in v] for k, v in with_files.items()
    } == {
        "bielefeld-pub-2527408": [
            (
                "https://pub.uni-bielefeld.de/download/2527408/2527412",
                "2527412.pdf",
                "application/pdf",
                FileAccess.OPEN,
            )
        ],
        "guidelines-4.0.1-journalarticle1": [
            (
                "http://europepmc.org/articles/PMC5574022?pdf=render",
                "PMC5574022.pdf",
                "application/pdf",
                FileAccess.OPEN,
            )
        ],
        "guidelines-journalarticle1": [
            (
                "http://europepmc.org/articles/PMC5574022?pdf=render",
                "PMC5574022.pdf",
                "application/pdf",
                FileAccess.OPEN,
            )
        ],
        "iris-unimi-907506": [
            (
                "https://air.unimi.it/bitstream/2434/907506/4/Full%20manuscript%20resubmitted.pdf",
                "Full manuscript resubmitted.pdf",
                "application/pdf",
                FileAccess.OPEN,
            )
        ],
    }


def test_real_marc_records_have_the_one_file_their_links_name(vocabularies):
    """The real catalogues' 856s are landing pages, tables of contents and publisher
    descriptions (web pages), ARK resolvers and an image viewer - links, no files - but for
    one PDF of Princeton's."""
    found = real_files(MARCXMLRDMTransformer(), "marc")
    assert len(found) > 300
    assert {k: v for k, v in found.items() if v} == {
        "oai:princeton:36": [
            FileReference(
                url="http://libweb2.princeton.edu/rbsc2/misc/Gender_Academy.pdf",
                name="Gender_Academy.pdf",
            )
        ]
    }


def test_real_lido_records_name_one_file_per_resource_set(vocabularies):
    from lxml import etree

    found = real_files(LIDORDMTransformer(), "lido")
    documents = recorded_documents(REAL / "lido")
    sets = {
        identifier: [
            e
            for e in etree.fromstring(document.encode()).iter()
            if isinstance(e.tag, str) and etree.QName(e).localname == "resourceSet"
        ]
        for identifier, document in documents.items()
    }
    assert sum(map(len, found.values())) >= 0.9 * sum(map(len, sets.values()))
    for identifier, files in found.items():
        assert len(files) <= len(sets[identifier]), identifier
        assert len({f.name for f in files}) == len(files), identifier
        for reference in files:
            assert reference.url.startswith(("http://", "https://")), identifier
            assert "/" not in reference.name and ".." not in reference.name
    by_stem = {k.split(":")[1]: v for k, v in found.items()}
    # The master, not the thumbnail nor the preview.
    assert urls(by_stem["ddb-aqinda-13"])[0] == "https://ikmk.smb.museum/image/18314033/vs_org.jpg"
    assert urls(by_stem["ddb-aqinda-15"]) == [
        "https://www.museum-digital.de/data/berlin/images/import_17/201601/29173524067.jpg"
    ]
    # A IIIF image is named after its identifier.
    assert by_stem["kenom-3"][0].name == "record_DE-68_kenom_123924_vs.jpg"
    assert by_stem["ddb-aqinda-12"][0] == FileReference(
        url="https://id.smb.museum/digital-asset/5822610", name="5822610.jpg", mimetype="image/jpeg"
    )
