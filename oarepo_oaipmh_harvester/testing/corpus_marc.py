"""Synthetic MARC 21 bibliographic records (MARCXML slim) that test providers serve under the
``marcxml`` prefix: a book as a library catalogues it, an article as InvenioRDM's own
serializer writes it, an untyped record, an undated one and one full of fields RDM has no place
for. Together they hold every field ``marcxml_rdm`` maps (docs/marcxml.rst).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape

from .corpus import Corpus
from .provider import served_document_key

MARC_NS = "http://www.loc.gov/MARC21/slim"
Subfields = Sequence[tuple[str, str]]
Field = tuple[str, str, Subfields] | tuple[str, str]
"""(tag, indicators, subfields) of a data field, or (tag, data) of a control field."""


def _field(found: Field) -> str:
    if len(found) == 2:
        tag, data = found
        return f'<controlfield tag="{tag}">{escape(data)}</controlfield>'
    tag, indicators, subfields = found
    inner = "".join(
        f'<subfield code="{code}">{escape(value)}</subfield>' for code, value in subfields
    )
    ind1, ind2 = (indicators + "  ")[:2]
    return f'<datafield tag="{tag}" ind1="{ind1}" ind2="{ind2}">{inner}</datafield>'


def marcxml_document(
    fields: Sequence[Field],
    leader: str = "00000nam a2200000 a 4500",
    collection: bool = True,
    prefix: str = "marc",
) -> str:
    """A MARCXML record of `fields` (in the order given), in a ``collection`` or bare, with
    the namespace `prefix` (``""`` for the default namespace)."""
    p = f"{prefix}:" if prefix else ""
    declaration = f'xmlns{":" + prefix if prefix else ""}="{MARC_NS}"'
    body = f"<{p}leader>{leader}</{p}leader>" + "".join(_field(f) for f in fields)
    if prefix:
        body = body.replace("<controlfield", f"<{p}controlfield")
        body = body.replace("</controlfield>", f"</{p}controlfield>")
        body = body.replace("<datafield", f"<{p}datafield").replace(
            "</datafield>", f"</{p}datafield>"
        )
        body = body.replace("<subfield", f"<{p}subfield").replace("</subfield>", f"</{p}subfield>")
    if collection:
        return f"<{p}collection {declaration}><{p}record>{body}</{p}record></{p}collection>"
    return f"<{p}record {declaration}>{body}</{p}record>"


BOOK: list[Field] = [
    ("001", "990012345"),
    ("003", "DE-101"),
    ("005", "20240101120000.0"),
    ("008", "240101s2021    gw a          000 0 ger d"),
    ("020", "  ", [("a", "9783161484100 (pbk.)"), ("q", "paperback")]),
    ("022", "  ", [("a", "0378-5955")]),
    ("024", "7 ", [("a", "10.1234/marc.book.2021"), ("2", "doi")]),
    ("024", "7 ", [("a", "urn:nbn:de:101-2021"), ("2", "urn")]),
    ("035", "  ", [("a", "(OCoLC)123456789")]),
    ("041", "0 ", [("a", "ger"), ("a", "eng")]),
    (
        "100",
        "1 ",
        [
            ("a", "Novák, Jan,"),
            ("e", "author."),
            ("0", "(orcid)0000-0002-1825-0097"),
            ("u", "Charles University"),
        ],
    ),
    ("245", "10", [("a", "Spectral lattice models :"), ("b", "a primer /"), ("c", "Jan Novák.")]),
    ("246", "31", [("a", "Spektrale Gittermodelle")]),
    ("880", "10", [("6", "245-01"), ("a", "Спектральные модели решёток")]),
    ("246", "30", [("a", "Lattice models")]),
    ("250", "  ", [("a", "2nd edition.")]),
    ("264", " 1", [("a", "Berlin :"), ("b", "Example Press,"), ("c", "2021.")]),
    ("264", " 4", [("c", "©2020")]),
    ("300", "  ", [("a", "xii, 214 pages ;"), ("c", "24 cm")]),
    ("336", "  ", [("a", "text"), ("b", "txt"), ("2", "rdacontent")]),
    ("490", "1 ", [("a", "Lecture notes in lattices ;"), ("v", "7")]),
    ("500", "  ", [("a", "Includes an index.")]),
    ("505", "0 ", [("a", "Lattices -- Spectra -- Models.")]),
    ("506", "0 ", [("a", "Open access.")]),
    ("520", "3 ", [("a", "A primer on spectral lattice models & their uses.")]),
    ("536", "  ", [("a", "Czech Science Foundation"), ("c", "GA21-12345S")]),
    ("540", "  ", [("a", "CC BY 4.0"), ("u", "https://creativecommons.org/licenses/by/4.0/")]),
    ("650", " 0", [("a", "Lattice theory"), ("x", "Spectra.")]),
    ("650", " 7", [("a", "Quasikristall"), ("2", "gnd")]),
    ("653", "  ", [("a", "lattice models")]),
    ("690", "  ", [("a", "Local physics")]),
    (
        "700",
        "1 ",
        [("a", "Müller, Anna,"), ("4", "edt"), ("0", "(DE-588)118547739"), ("u", "CERN")],
    ),
    ("700", "1 ", [("a", "Svobodová, Petra"), ("4", "aut")]),
    ("710", "2 ", [("a", "CERN."), ("b", "Theory Department"), ("4", "his")]),
    ("711", "2 ", [("a", "Lattice Conference"), ("4", "ctb")]),
    (
        "773",
        "0 ",
        [("t", "Journal of Lattices"), ("g", "Vol. 5, no. 2 (2021), p. 33-45"), ("x", "1234-5679")],
    ),
    (
        "856",
        "40",
        [
            ("u", "https://library.example.org/books/990012345.pdf"),
            ("q", "application/pdf"),
            ("y", "Full text"),
        ],
    ),
    ("856", "42", [("u", "https://library.example.org/books/990012345/toc"), ("3", "TOC")]),
    ("980", "  ", [("a", "BOOK")]),
]
"""A book with every field a library catalogue gives that ``marcxml_rdm`` maps."""

ARTICLE: list[Field] = [
    ("001", "abcde-12345"),
    ("005", "20240102080000.0"),
    ("024", "  ", [("2", "doi"), ("a", "10.1234/marc.article.2022")]),
    ("041", "  ", [("a", "eng")]),
    ("100", "  ", [("a", "Nováková, Eva"), ("0", "(orcid)0000-0002-1694-233X"), ("u", "CERN")]),
    ("245", "  ", [("a", "The Charles Bridge at dawn")]),
    ("260", "  ", [("b", "Zenodo"), ("c", "2022-06-21")]),
    ("520", "  ", [("a", "&lt;p&gt;Photographs of &lt;b&gt;the bridge&lt;/b&gt;.&lt;/p&gt;")]),
    ("520", " 1", [("a", "image/tiff")]),
    ("520", " 2", [("a", "3 photographs")]),
    ("540", "  ", [("a", "info:eu-repo/semantics/openAccess")]),
    (
        "540",
        "  ",
        [
            ("a", "Creative Commons Zero v1.0 Universal"),
            ("u", "https://creativecommons.org/publicdomain/zero/1.0/legalcode"),
        ],
    ),
    ("542", "  ", [("l", "open")]),
    ("650", "17", [("a", "cc0-1.0"), ("2", "spdx")]),
    ("653", "  ", [("a", "Prague")]),
    ("653", "  ", [("a", "bridges")]),
    ("700", "  ", [("a", "CERN"), ("u", "CERN")]),
    ("700", "  ", [("a", "Doe, John"), ("4", "edt")]),
    ("773", "  ", [("a", "10.5555/photos.1"), ("i", "Is part of"), ("n", "doi")]),
    ("856", " 2", [("a", "doi:10.5555/photos.1")]),
    (
        "856",
        "4 ",
        [
            ("s", "123456"),
            ("z", "md5:0123456789abcdef0123456789abcdef"),
            ("u", "https://zenodo.example.org/records/12345/files/bridge.tif"),
        ],
    ),
    ("909", "CO", [("o", "oai:zenodo.example.org:12345"), ("p", "user-photos")]),
    ("980", "  ", [("a", "info:eu-repo/semantics/other")]),
    ("980", "  ", [("a", "image"), ("b", "photo")]),
    ("999", "C5", [("x", "Doe, J. (2020). Bridges. Prague.")]),
]
"""An image record as InvenioRDM's MARCXML serializer writes it (its tags and codes)."""

UNTYPED: list[Field] = [
    ("008", "991118c19549999gw z||m|r ||| 0||||0und c"),
    ("110", "2 ", [("a", "Deutsche Gesellschaft für Gitter."), ("0", "(viaf)123456")]),
    ("245", "00", [("a", "Mitteilungen der Gesellschaft")]),
    ("260", "  ", [("a", "Bonn"), ("c", "[195-?]")]),
    ("506", "1 ", [("a", "Available to members only.")]),
    ("540", "  ", [("a", "All rights reserved.")]),
]

UNDATED: list[Field] = [
    ("245", "00", [("a", "Undated leaflet")]),
    ("700", "1 ", [("a", "Doe, Jane"), ("e", "illustrator")]),
]

UNMAPPABLE: list[Field] = [
    ("001", "u-1"),
    ("008", "200101s2020    xx            000 0 xyz d"),
    ("040", "  ", [("a", "DLC"), ("c", "DLC")]),
    ("082", "04", [("a", "530.4"), ("2", "23")]),
    ("100", "1 ", [("a", "Roe, Richard,"), ("d", "1901-1980"), ("0", "http://viaf.org/viaf/42")]),
    ("245", "10", [("a", "Of things unmapped /"), ("c", "Richard Roe.")]),
    ("246", "1 ", [("a", "Un")]),
    ("264", " 1", [("c", "circa the twenties")]),
    ("264", " 3", [("b", "Print Works")]),
    ("502", "  ", [("a", "Thesis (Ph.D.)"), ("c", "Example University")]),
    ("773", "0 ", [("t", "Annals of Nothing"), ("v", "3")]),
    ("856", "40", [("u", "images/scan.jpg")]),
    ("909", "CO", [("p", "user-elsewhere")]),
    ("880", "1 ", [("6", "100-01"), ("a", "Роу, Ричард")]),
    ("909", "C4", [("p", "Annals of Nothing")]),
    ("995", "  ", [("a", "local")]),
]

DOCUMENTS: dict[str, tuple[list[Field], str]] = {
    "book": (BOOK, "00000nam a2200000 a 4500"),
    "article": (ARTICLE, "00000nam a2200000 a 4500"),
    "untyped": (UNTYPED, "01991nas a2200493 c 4500"),
    "undated": (UNDATED, "00000n   a2200000   4500"),
    "unmappable": (UNMAPPABLE, "00000nzm a2200000 a 4500"),
}


def marcxml_corpus(start: datetime | None = None) -> Corpus:
    """The synthetic MARC records served under the ``marcxml`` prefix (their titles as
    ``oai_dc``): the book in a ``collection``, the rest bare records, one with the MARC
    namespace as the default namespace."""
    corpus = Corpus(sets={"marc": "MARC records"})
    start = start or datetime(2024, 1, 1, tzinfo=UTC)
    for number, (name, (fields, leader)) in enumerate(DOCUMENTS.items()):
        document = marcxml_document(
            fields,
            leader=leader,
            collection=name == "book",
            prefix="" if name == "article" else "marc",
        )
        corpus.add(
            f"oai:library.example.org:{name}",
            {"title": [name], served_document_key("marcxml"): [document]},
            sets=("marc",),
            datestamp=start + timedelta(days=number),
        )
    return corpus
