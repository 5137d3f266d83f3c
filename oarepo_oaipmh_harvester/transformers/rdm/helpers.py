"""Pure mapping helpers of the InvenioRDM transformers: no application, no vocabulary.

Decision owned here: what a harvested value looks like to RDM before any vocabulary is asked -
a name as a person or an organisation, a date as EDTF level 0, an eu-repo term, a language
code's candidates, a DOI, an identifier's scheme (idutils' detection, or a DataCite identifier
type's), whether a value is a link RDM takes, a license URL made comparable, a free-text type
as a keyword of the type table, a DataCite term as RDM's id, and whether two identifiers are
the same.

invenio-rdm-records is an optional extra: what these need (edtf, idutils, pycountry,
marshmallow) is imported where it is used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

EUREPO_SEMANTICS = "info:eu-repo/semantics/"

# access.files for each eu-repo access right. The record itself stays public: the source
# published its metadata over OAI-PMH, and a harvested record is metadata only.
EUREPO_ACCESS: dict[str, str] = {
    "openAccess": "public",
    "closedAccess": "restricted",
    "embargoedAccess": "restricted",
    "restrictedAccess": "restricted",
}

# DCMI Type vocabulary terms and common free-text types -> RDM resource type ids, tried in
# order; an id the instance does not have is skipped.
TYPE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "text": ("publication",),
    "dataset": ("dataset",),
    "data set": ("dataset",),
    "image": ("image",),
    "stillimage": ("image",),
    "still image": ("image",),
    "movingimage": ("video",),
    "moving image": ("video",),
    "video": ("video",),
    "sound": ("audio",),
    "audio": ("audio",),
    "software": ("software",),
    "physicalobject": ("physicalobject",),
    "physical object": ("physicalobject",),
    "event": ("event",),
    "interactiveresource": ("other",),
    "article": ("publication-article",),
    "journal article": ("publication-article",),
    "book": ("publication-book",),
    "book chapter": ("publication-section",),
    "book part": ("publication-section",),
    "thesis": ("publication-thesis", "publication-dissertation"),
    "doctoral thesis": ("publication-thesis", "publication-dissertation"),
    "dissertation": ("publication-dissertation", "publication-thesis"),
    "conference paper": ("publication-conferencepaper",),
    "conference object": ("publication-conferencepaper",),
    "conference proceedings": ("publication-conferenceproceeding",),
    "report": ("publication-report",),
    "technical report": ("publication-report",),
    "preprint": ("publication-preprint",),
    "working paper": ("publication-workingpaper",),
    "patent": ("publication-patent",),
    "review": ("publication-peerreview",),
    "presentation": ("presentation",),
    "lecture": ("presentation", "lesson"),
    "poster": ("poster",),
}

LEVEL0_EDTF = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?(/\d{4}(-\d{2}(-\d{2})?)?)?$")

# identifier schemes in the order they are preferred when idutils detects several (an ISBN
# is also a valid EAN-13, an https DOI also a URL).
SCHEME_PREFERENCE = (
    "doi",
    "isbn",
    "issn",
    "eissn",
    "handle",
    "ark",
    "arxiv",
    "pmid",
    "urn",
    "purl",
    "w3id",
    "lsid",
    "igsn",
    "ean13",
    "istc",
    "ads",
    "url",
)


def person_or_org(name: str) -> dict[str, str]:
    """``"Family, Given"`` -> a person; a name without a comma -> an organisation.

    Dublin Core does not say which a name is; the inverted form is what repositories emit
    for people (and what RDM's own Dublin Core serializer writes).
    """
    family, comma, given = (part.strip() for part in name.partition(","))
    if comma and family:
        person = {"type": "personal", "family_name": family}
        if given:
            person["given_name"] = given
        return person
    return {"type": "organizational", "name": name.strip()}


def display_name(person_or_org: Mapping[str, Any]) -> str:
    """A ``person_or_org`` entry's name as people write it in a list: ``Family, Given``."""
    parts = (person_or_org.get("family_name", ""), person_or_org.get("given_name", ""))
    return person_or_org.get("name") or ", ".join(part for part in parts if part)


def level0_date(value: str) -> str | None:
    """`value` as an EDTF level 0 date or interval (time part cut), None if it is not one.

    RDM accepts level 0 only (``2020~`` or ``ca. 1850`` are refused); the time of a
    ``2020-06-01T12:00:00Z`` has no place in ``publication_date``.
    """
    candidate = "/".join(part.strip().split("T", 1)[0] for part in value.strip().split("/"))
    if not LEVEL0_EDTF.match(candidate):
        return None
    if not all(_in_edtf_calendar(part) for part in candidate.split("/")):
        return None
    return candidate


_YEAR_IN_TEXT = re.compile(r"(?<!\d)(1\d{3}|20\d{2})(?![\d])")


def years_in_text(value: str) -> str | None:
    """The year a free-text date names, as EDTF level 0: its one year (``(1876)``,
    ``12-20-2007``, ``circa;1812;;``, ``Pusă în serviciu în 1914``), or the interval of two
    years in order (``1936?-1938?``); None for none, more, or two out of order.

    A last resort after :func:`level0_date` and a format's own rules: a lone year in the
    text is the one fact about the date it gives for sure.
    """
    years = list(dict.fromkeys(_YEAR_IN_TEXT.findall(value)))
    if len(years) == 1:
        return years[0]
    if len(years) == 2 and years[0] < years[1]:
        return f"{years[0]}/{years[1]}"
    return None


# The days of a month as the EDTF grammar (python-edtf, which RDM validates with) has them:
# February has 29 in every year.
_EDTF_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _in_edtf_calendar(date: str) -> bool:
    """Whether a ``YYYY[-MM[-DD]]`` date has a month and day the EDTF grammar accepts.

    Checked here rather than by ``edtf.parse_edtf``: its full grammar took 14 ms a record
    (most of an ``oai_dc_rdm`` transform); tests/rdm/test_dc_to_rdm.py holds the two equal.
    """
    _, *rest = date.split("-")
    month = int(rest[0]) if rest else 1
    day = int(rest[1]) if len(rest) > 1 else 1
    return 1 <= month <= 12 and 1 <= day <= _EDTF_DAYS_IN_MONTH[month - 1]


def eurepo_term(value: str) -> str | None:
    """The term of an ``info:eu-repo/semantics/<term>`` URI, else None."""
    value = value.strip()
    if value.startswith(EUREPO_SEMANTICS):
        return value[len(EUREPO_SEMANTICS) :].strip("/") or None
    return None


def bibliographic_to_terminology(code: str) -> str | None:
    """ISO 639-2/B code (``ger``) -> the ISO 639-3 id (``deu``), via pycountry."""
    try:
        import pycountry
    except ImportError:  # pragma: no cover - pycountry comes with invenio-rdm-records
        return None
    language = pycountry.languages.get(bibliographic=code.lower())
    return getattr(language, "alpha_3", None)


def language_candidates(value: str) -> tuple[str | None, str | None]:
    """(3-letter candidate, 2-letter candidate) of a language code or name.

    ``de-AT`` and ``en_US`` keep their primary subtag; a language name (``German``) is looked
    up in pycountry. Which candidate exists is for the vocabulary to say.
    """
    primary = re.split(r"[-_]", value.strip(), maxsplit=1)[0].lower()
    if len(primary) == 3 and primary.isalpha():
        return primary, None
    if len(primary) == 2 and primary.isalpha():
        return None, primary
    try:
        import pycountry

        language = pycountry.languages.lookup(value.strip())
    except (ImportError, LookupError):
        return None, None
    return getattr(language, "alpha_3", None), None


def doi_of(value: str) -> str | None:
    """The normalised DOI in `value` (``doi:``, ``https://doi.org/`` forms too), else None."""
    import idutils

    value = value.strip()
    if idutils.is_doi(value):
        return idutils.normalize_doi(value)
    return None


# Schemes idutils finds in values that only look like them: any number is a PubMed id to it,
# and any "a/b" a Handle (a museum's "azdocs: WBA 1.2:S 75/2011"). Without their marker (or,
# for a Handle, a numeric prefix) an untyped value is not taken for one.
MARKED_SCHEMES: dict[str, re.Pattern[str]] = {
    "pmid": re.compile(
        r"^(pmid:\s*|https?://(www\.)?(pubmed\.ncbi\.nlm\.nih\.gov|ncbi\.nlm\.nih\.gov/pubmed)/)",
        re.I,
    ),
    "handle": re.compile(r"^(hdl:\s*|(https?://)?hdl\.handle\.net/|\d+(\.\d+)*/\S+$)", re.I),
}


def identifier_scheme(value: str, allowed: Iterable[str] | None = None) -> str | None:
    """The preferred scheme idutils detects for `value`, among `allowed` if given; a scheme
    of MARKED_SCHEMES only with its marker."""
    import idutils

    value = value.strip()
    detected = {
        scheme
        for scheme in idutils.detect_identifier_schemes(value)
        if scheme not in MARKED_SCHEMES or MARKED_SCHEMES[scheme].match(value)
    }
    if allowed is not None:
        detected &= set(allowed)
    for scheme in SCHEME_PREFERENCE:
        if scheme in detected:
            return scheme
    return min(detected) if detected else None


def scheme_for_type(datacite_type: str, schemes: Mapping[str, Any]) -> str | None:
    """The RDM scheme of a DataCite identifier type: the scheme of that name, else the one
    whose ``datacite`` label it is (``bibcode`` -> ``ads``), case ignored."""
    wanted = datacite_type.strip().lower()
    if not wanted:
        return None
    if wanted in schemes:
        return wanted
    for scheme, spec in schemes.items():
        if str(spec.get("datacite") or "").lower() == wanted:
            return scheme
    return None


def valid_for(schemes: Mapping[str, Any], scheme: str, value: str) -> bool:
    validator = schemes.get(scheme, {}).get("validator")
    return bool(validator(value)) if callable(validator) else True


def is_web_url(value: str) -> bool:
    """Whether RDM takes `value` as a link (marshmallow's URL rule, as RDM's schema uses)."""
    from marshmallow import ValidationError, validate

    try:
        validate.URL()(value)
    except ValidationError:
        return False
    return True


def comparable_url(url: str) -> str:
    """A license URL without scheme, ``www.``, trailing slash, ``legalcode`` or case."""
    url = url.strip().lower()
    url = re.sub(r"^https?://(www\.)?", "", url)
    url = re.sub(r"/(legalcode(\.[a-z-]+)?|deed\.[a-z-]+)$", "", url)
    return url.rstrip("/")


def type_keyword(value: str) -> str:
    """A free-text type as a TYPE_KEYWORDS key: lower case, single spaces, no DCMI URI."""
    value = value.strip().removeprefix("http://purl.org/dc/dcmitype/")
    return " ".join(value.lower().replace("_", " ").split())


def kebab(term: str) -> str:
    """``SeriesInformation`` -> ``series-information`` (RDM's ids for DataCite's terms)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", term.strip()).lower()


def same_identifier(one: Mapping[str, str], other: Mapping[str, str]) -> bool:
    """Whether two ``{"identifier", "scheme"}`` entries name the same thing (DOIs ignore case)."""
    if one["scheme"] != other["scheme"]:
        return False
    if one["scheme"] == "doi":
        return one["identifier"].lower() == other["identifier"].lower()
    return one["identifier"] == other["identifier"]


def pid_doi(data: Mapping[str, Any]) -> str | None:
    """The DOI already in ``pids.doi`` of record data, lower-cased, else None."""
    doi = data.get("pids", {}).get("doi", {}).get("identifier")
    return doi.lower() if doi else None


def add_identifier(identifiers: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Append `entry` unless the same identifier is there (RDM refuses duplicates)."""
    if not any(same_identifier(entry, known) for known in identifiers):
        identifiers.append(entry)
