"""A synthetic corpus of OpenAIRE Guidelines v4 literature records, served under the
``oai_openaire`` prefix (and their titles as ``oai_dc``).

Every element the ``oai_openaire_rdm`` mapping reads appears in one record or another: the
journal article carries nearly all of them, the others an embargo, restricted and
metadata-only access, a record without creators and one full of values RDM has no place for.
Records are served as written (``served_document_key``), the way DSpace's XOAI writes them:
``oaire:`` prefixed, DataCite kernel 4 and Dublin Core beside.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape

from .corpus import Corpus, _utc

OPENAIRE_NS = "http://namespace.openaire.eu/schema/oaire/"
OPENAIRE_SCHEMA = "https://www.openaire.eu/schema/repo-lit/4.0/openaire.xsd"
OPENAIRE_PREFIX = "oai_openaire"
COAR_TYPE = "http://purl.org/coar/resource_type/"
COAR_ACCESS = "http://purl.org/coar/access_right/"

_OPEN = (
    f'<oaire:resource xmlns:oaire="{OPENAIRE_NS}" xmlns:datacite="http://datacite.org/schema/kernel-4" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    f'xsi:schemaLocation="{OPENAIRE_NS} {OPENAIRE_SCHEMA}">'
)

DEFAULT_CREATORS = (
    '<datacite:creator><datacite:creatorName nameType="Personal">Novák, Jan</datacite:creatorName>'
    "<datacite:givenName>Jan</datacite:givenName><datacite:familyName>Novák</datacite:familyName>"
    '<datacite:nameIdentifier nameIdentifierScheme="ORCID" schemeURI="https://orcid.org">'
    "https://orcid.org/0000-0002-1825-0097</datacite:nameIdentifier>"
    '<datacite:affiliation affiliationIdentifier="https://ror.org/01ggx4157" '
    'affiliationIdentifierScheme="ROR">CERN</datacite:affiliation>'
    "<datacite:affiliation>Charles University</datacite:affiliation></datacite:creator>"
    "<datacite:creator><datacite:creatorName>Dvořáková, Eliška</datacite:creatorName>"
    '<datacite:nameIdentifier nameIdentifierScheme="ORCID iD" schemeURI="http://orcid.org/">'
    "0000-0001-5109-3700</datacite:nameIdentifier></datacite:creator>"
    '<datacite:creator><datacite:creatorName nameType="Organizational">European Organization for '
    'Nuclear Research</datacite:creatorName><datacite:nameIdentifier nameIdentifierScheme="ROR">'
    "https://ror.org/01ggx4157</datacite:nameIdentifier></datacite:creator>"
)
DEFAULT_CONTRIBUTORS = (
    '<datacite:contributor contributorType="Editor"><datacite:contributorName>Svoboda, Petr'
    "</datacite:contributorName></datacite:contributor>"
    '<datacite:contributor contributorType="HostingInstitution"><datacite:contributorName '
    'nameType="Organizational">CESNET</datacite:contributorName></datacite:contributor>'
)
DEFAULT_FUNDING = (
    "<oaire:fundingReference><oaire:funderName>European Commission</oaire:funderName>"
    '<oaire:funderIdentifier funderIdentifierType="ROR">https://ror.org/00k4n6c32</oaire:funderIdentifier>'
    '<oaire:awardNumber awardURI="info:eu-repo/grantAgreement/EC/H2020/755021/">755021</oaire:awardNumber>'
    "<oaire:awardTitle>Personalised Treatment For Cystic Fibrosis Patients</oaire:awardTitle>"
    "</oaire:fundingReference>"
    "<oaire:fundingReference><oaire:funderName>Deutsche Forschungsgemeinschaft</oaire:funderName>"
    '<oaire:funderIdentifier funderIdentifierType="Crossref Funder ID">'
    "http://dx.doi.org/10.13039/501100001659</oaire:funderIdentifier>"
    '<oaire:awardNumber awardURI="info:eu-repo/grantAgreement/DFG//390685689/">390685689</oaire:awardNumber>'
    "</oaire:fundingReference>"
    "<oaire:fundingReference><oaire:funderName>Czech Science Foundation</oaire:funderName>"
    '<oaire:awardNumber awardURI="https://doi.org/10.5555/gacr.21-00001S">21-00001S</oaire:awardNumber>'
    "<oaire:awardTitle>Lattice spectra</oaire:awardTitle></oaire:fundingReference>"
)
DEFAULT_CITATION = (
    "<oaire:citationTitle>Journal of Lattice Studies</oaire:citationTitle>"
    "<oaire:citationVolume>23</oaire:citationVolume><oaire:citationIssue>31</oaire:citationIssue>"
    "<oaire:citationStartPage>7444</oaire:citationStartPage>"
    "<oaire:citationEndPage>7447</oaire:citationEndPage>"
)


def _x(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


def openaire_document(
    number: str,
    *,
    title: str = "Spectral lattice models",
    coar_type: tuple[str, str] = ("c_6501", "journal article"),
    access: tuple[str, str] = ("c_abf2", "open access"),
    issued: str = "2021-03-04",
    available: str = "2021-03-04",
    creators: str = DEFAULT_CREATORS,
    contributors: str = DEFAULT_CONTRIBUTORS,
    funding: str = DEFAULT_FUNDING,
    citation_fields: str = DEFAULT_CITATION,
    license_uri: str = "https://creativecommons.org/licenses/by/4.0/",
    files: tuple[tuple[str, str, str, str], ...] | None = None,
    extra: str = "",
) -> str:
    """A synthetic ``oaire:resource`` with every element the ``oai_openaire_rdm`` mapping
    reads; `files` are (url, mimeType, objectType, COAR access right id), `extra` further
    elements at the end (values RDM has no place for)."""
    if files is None:
        files = ((f"https://repository.example.org/{number}/article.pdf", "application/pdf",
                  "fulltext", access[0]),)  # fmt: skip
    file_xml = "".join(
        f'<oaire:file accessRightsURI="{COAR_ACCESS}{right}" mimeType="{_x(mime)}" '
        f'objectType="{_x(kind)}">{_x(url)}</oaire:file>'
        for url, mime, kind, right in files
    )
    parts = [
        _OPEN,
        "<datacite:titles>",
        f'<datacite:title xml:lang="en">{_x(title)}</datacite:title>',
        '<datacite:title titleType="Subtitle" xml:lang="en">Photographs of the set-up</datacite:title>',
        '<datacite:title titleType="TranslatedTitle" xml:lang="de">Spektrale Gittermodelle</datacite:title>',
        "</datacite:titles>",
        f"<datacite:creators>{creators}</datacite:creators>" if creators else "",
        f"<datacite:contributors>{contributors}</datacite:contributors>" if contributors else "",
        f"<oaire:fundingReferences>{funding}</oaire:fundingReferences>" if funding else "",
        "<datacite:alternateIdentifiers>",
        f'<datacite:alternateIdentifier alternateIdentifierType="DOI">10.1234/lattice.{number}'
        "</datacite:alternateIdentifier>",
        '<datacite:alternateIdentifier alternateIdentifierType="ISBN">978-3-16-148410-0'
        "</datacite:alternateIdentifier>",
        "</datacite:alternateIdentifiers>",
        "<datacite:relatedIdentifiers>",
        '<datacite:relatedIdentifier relatedIdentifierType="ISSN" relationType="IsPartOf">0947-6539'
        "</datacite:relatedIdentifier>",
        '<datacite:relatedIdentifier relatedIdentifierType="DOI" relationType="References">'
        "10.5555/journal.article.7</datacite:relatedIdentifier>",
        "</datacite:relatedIdentifiers>",
        "<datacite:dates>",
        f'<datacite:date dateType="Issued">{issued}</datacite:date>',
        '<datacite:date dateType="Accepted">2020-12-01</datacite:date>',
        f'<datacite:date dateType="Available">{available}</datacite:date>',
        "</datacite:dates>",
        "<dc:language>eng</dc:language>",
        "<dc:publisher>Example University Press</dc:publisher>",
        f'<oaire:resourceType resourceTypeGeneral="literature" uri="{COAR_TYPE}{coar_type[0]}">'
        f"{_x(coar_type[1])}</oaire:resourceType>",
        '<dc:description xml:lang="en">We study spectral lattice models &amp; their photographs.'
        "</dc:description>",
        '<dc:description xml:lang="de">Wir untersuchen spektrale Gittermodelle.</dc:description>',
        "<dc:format>application/pdf</dc:format>",
        f'<datacite:identifier identifierType="Handle">11234/{number}</datacite:identifier>',
        f'<datacite:rights rightsURI="{COAR_ACCESS}{access[0]}">{_x(access[1])}</datacite:rights>'
        if access[0]
        else "",
        f'<oaire:licenseCondition uri="{_x(license_uri)}">Creative Commons Attribution 4.0'
        "</oaire:licenseCondition>"
        if license_uri
        else "",
        "<datacite:subjects>",
        '<datacite:subject xml:lang="en">lattice</datacite:subject>',
        '<datacite:subject subjectScheme="MeSH" schemeURI="https://id.nlm.nih.gov/mesh/" '
        'valueURI="https://id.nlm.nih.gov/mesh/D000001">Calcimycin</datacite:subject>',
        "</datacite:subjects>",
        "<datacite:sizes><datacite:size>12 pages</datacite:size></datacite:sizes>",
        "<datacite:geoLocations><datacite:geoLocation><datacite:geoLocationPlace>Geneva"
        "</datacite:geoLocationPlace><datacite:geoLocationPoint><datacite:pointLongitude>6.05"
        "</datacite:pointLongitude><datacite:pointLatitude>46.23</datacite:pointLatitude>"
        "</datacite:geoLocationPoint></datacite:geoLocation></datacite:geoLocations>",
        '<oaire:version uri="http://purl.org/coar/version/c_970fb48d4fbd8a85">VoR</oaire:version>',
        file_xml,
        citation_fields,
        extra,
        "</oaire:resource>",
    ]
    return "".join(parts)


UNMAPPABLE = (
    "<dc:coverage>17th century</dc:coverage><dc:source>Journal of Flyers, 3</dc:source>"
    "<dcterms:audience>Researchers</dcterms:audience>"
)


def openaire_documents() -> dict[str, str]:
    """The documents of :func:`openaire_corpus` by the last part of their OAI identifier."""
    return {
        "article": openaire_document("1"),
        "embargoed-thesis": openaire_document(
            "2",
            title="Embargoed lattice thesis",
            coar_type=("c_db06", "doctoral thesis"),
            access=("c_f1cf", "embargoed access"),
            available="2999-01-01",
            funding="",
            citation_fields="",
        ),
        "restricted-chapter": openaire_document(
            "3",
            title="A chapter on lattices",
            coar_type=("c_3248", "book part"),
            access=("c_16ec", "restricted access"),
            citation_fields="<oaire:citationTitle>Lattices, a handbook</oaire:citationTitle>"
            "<oaire:citationEdition>2nd</oaire:citationEdition>",
        ),
        "metadata-only-dataset": openaire_document(
            "4",
            title="Lattice measurements",
            coar_type=("c_ddb1", "dataset"),
            access=("c_14cb", "metadata only access"),
            files=(),
            citation_fields="<oaire:citationConferencePlace>Geneva</oaire:citationConferencePlace>"
            "<oaire:citationConferenceDate>2021-05-03/2021-05-07</oaire:citationConferenceDate>",
        ),
        "no-creator": openaire_document(
            "5",
            title="Flyer of a guild",
            coar_type=("c_0000", "Flugblatt"),
            creators="",
            license_uri="https://example.org/terms",
            extra=UNMAPPABLE,
        ),
    }


def openaire_corpus(start: datetime | None = None) -> Corpus:
    """Synthetic OpenAIRE v4 literature records served under the ``oai_openaire`` prefix
    (their titles as ``oai_dc``): a journal article with every mapped element, an embargoed
    doctoral thesis, a restricted book chapter, a metadata-only dataset and a record without
    creators full of values RDM has no place for."""
    from .provider import served_document_key

    corpus = Corpus(sets={"openaire": "OpenAIRE"})
    start = _utc(start or datetime(2024, 1, 1, tzinfo=UTC))
    for number, (name, xml) in enumerate(openaire_documents().items()):
        corpus.add(
            f"oai:repository.example.org:{name}",
            {"title": [name], served_document_key(OPENAIRE_PREFIX): [xml]},
            sets=("openaire",),
            datestamp=start + timedelta(days=number),
        )
    return corpus


def large_openaire_document(target_bytes: int, number: str = "large") -> str:
    """An OpenAIRE record of about `target_bytes`, never more: a collaboration's paper (3,000
    creators with affiliations, 1,000 subjects, 1,000 file locations) whose abstracts in
    further languages make up the rest (RDM publishes a record of 20,000 creators in minutes,
    which would measure RDM, not the transform)."""
    from .corpus import _WORDS

    people = "".join(
        f"<datacite:creator><datacite:creatorName>Author {i}, Given</datacite:creatorName>"
        f"<datacite:affiliation>Institute {i % 300} of Lattice Physics</datacite:affiliation>"
        "</datacite:creator>"
        for i in range(3000)
    )
    subjects = "".join(
        f"<datacite:subject>lattice topic {i}</datacite:subject>" for i in range(1000)
    )
    files = tuple(
        (f"https://repository.example.org/{number}/part-{i}.pdf", "application/pdf",
         "fulltext", "c_abf2")
        for i in range(1000)
    )  # fmt: skip
    abstract = " ".join(_WORDS[i % len(_WORDS)] for i in range(12_000))

    def build(count: int) -> str:
        abstracts = "".join(
            f"<dc:description>{_x(abstract)} ({i})</dc:description>" for i in range(count)
        )
        return openaire_document(
            number,
            creators=people,
            files=files,
            extra=f"<datacite:subjects>{subjects}</datacite:subjects>{abstracts}",
        )

    base = len(build(0).encode())
    step = len(build(1).encode()) - base
    return build(max(0, int((target_bytes - base) / step)))
