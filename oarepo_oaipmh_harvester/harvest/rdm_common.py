"""What the transformers into InvenioRDM records share (``oai_dc_rdm``, ``oai_datacite_rdm``).

Decision owned here: how a value found in harvested metadata is matched to this instance's
vocabularies (languages, licenses, resource types, and the contributed affiliations, funders,
awards and subjects), how an identifier's scheme is decided, when a DOI becomes ``pids.doi``,
and what an eu-repo access term does to ``access``. :class:`RDMTransformer` holds what one run
of such a transformer keeps: the instance's settings, the vocabulary cache and the warnings of
the record being transformed.

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
It is one module because the look-ups and the rules that use them share one per-run cache
and one warning list, whichever metadata format a transformer reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from typing import Any

DEFAULT_RESOURCE_TYPE_KEY = "OAI_HARVESTER_RDM_DEFAULT_RESOURCE_TYPE"
DEFAULT_CONTRIBUTOR_ROLE_KEY = "OAI_HARVESTER_RDM_DEFAULT_CONTRIBUTOR_ROLE"

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

# Vocabularies with a service of their own (invenio-vocabularies' contrib); every other
# vocabulary is a type of the generic vocabularies service.
CONTRIB_VOCABULARIES = frozenset({"affiliations", "awards", "funders", "names", "subjects"})


# -- pure mapping helpers (no application needed) --------------------------------------------
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


def level0_date(value: str) -> str | None:
    """`value` as an EDTF level 0 date or interval (time part cut), None if it is not one.

    RDM accepts level 0 only (``2020~`` or ``ca. 1850`` are refused); the time of a
    ``2020-06-01T12:00:00Z`` has no place in ``publication_date``.
    """
    from edtf import parse_edtf
    from edtf.parser.edtf_exceptions import EDTFParseException

    candidate = "/".join(part.strip().split("T", 1)[0] for part in value.strip().split("/"))
    if not LEVEL0_EDTF.match(candidate):
        return None
    try:
        parse_edtf(candidate)  # rejects month 13, day 32 and the like
    except EDTFParseException:
        return None
    return candidate


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


def identifier_scheme(value: str, allowed: Iterable[str] | None = None) -> str | None:
    """The preferred scheme idutils detects for `value`, among `allowed` if given."""
    import idutils

    detected = set(idutils.detect_identifier_schemes(value.strip()))
    if allowed is not None:
        detected &= set(allowed)
    for scheme in SCHEME_PREFERENCE:
        if scheme in detected:
            return scheme
    return min(detected) if detected else None


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


def external_doi_enabled(config: Mapping[str, Any]) -> bool:
    """Whether the instance takes DOIs from elsewhere as ``pids.doi`` (provider external).

    RDM drops the doi scheme unless DataCite or Crossref is enabled; then ``pids.doi`` is an
    "unknown scheme" error and the DOI goes into ``identifiers`` instead.
    """
    from flask import current_app

    doi = (config.get("RDM_PERSISTENT_IDENTIFIERS") or {}).get("doi")
    if not doi or "external" not in doi.get("providers", ()):
        return False
    is_enabled = doi.get("is_enabled")
    return bool(is_enabled(current_app)) if callable(is_enabled) else bool(is_enabled)


def require_rdm(transformer_name: str) -> None:
    """A clear error at the start of a run when the rdm extra is missing.

    The entry point exists in every install; saying so once beats an ImportError per record.
    """
    from importlib.util import find_spec

    if find_spec("invenio_rdm_records") is None:
        raise RuntimeError(
            f"The {transformer_name} transformer needs InvenioRDM: "
            "pip install oarepo-oaipmh-harvester[rdm]."
        )


# -- vocabulary look-ups ----------------------------------------------------------------------
class Vocabularies:
    """Look-ups in this instance's vocabularies, cached for the life of the object (one run).

    Through the vocabularies services with the system identity, as any other reader would.
    A search is only a candidate list: the exact comparison is made by the caller, because
    ``props`` are dynamically mapped text fields.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._searches: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._types: dict[str, bool] = {}

    @staticmethod
    def _service(vocabulary: str) -> Any:
        if vocabulary in CONTRIB_VOCABULARIES:
            from invenio_records_resources.proxies import current_service_registry

            return current_service_registry.get(vocabulary)
        from invenio_vocabularies.proxies import current_service

        return current_service

    def has_type(self, vocabulary: str) -> bool:
        if vocabulary not in self._types:
            if vocabulary in CONTRIB_VOCABULARIES:
                try:
                    self._service(vocabulary)
                    known = True
                except KeyError:  # the service registry's answer for an unknown id
                    known = False
            else:
                from invenio_vocabularies.records.models import VocabularyType

                known = VocabularyType.query.filter_by(id=vocabulary).one_or_none() is not None
            self._types[vocabulary] = known
        return self._types[vocabulary]

    def entry(self, vocabulary: str, id_: str) -> dict[str, Any] | None:
        """The entry `id_` of `vocabulary`, None if there is none."""
        key = (vocabulary, id_)
        if key not in self._entries:
            from invenio_access.permissions import system_identity
            from invenio_pidstore.errors import PIDDoesNotExistError
            from sqlalchemy.exc import NoResultFound

            result: dict[str, Any] | None = None
            if self.has_type(vocabulary):
                read_id = id_ if vocabulary in CONTRIB_VOCABULARIES else (vocabulary, id_)
                try:
                    result = self._service(vocabulary).read(system_identity, read_id).to_dict()
                # A contributed vocabulary's model pid answers an unknown id with NoResultFound.
                except (PIDDoesNotExistError, NoResultFound):
                    result = None
            self._entries[key] = result
        return self._entries[key]

    def exists(self, vocabulary: str, id_: str) -> bool:
        return self.entry(vocabulary, id_) is not None

    def search(self, vocabulary: str, query: str) -> list[dict[str, Any]]:
        """Entries a query string finds (at most 100), in id order."""
        key = (vocabulary, query)
        if key not in self._searches:
            from invenio_access.permissions import system_identity

            hits: list[dict[str, Any]] = []
            if self.has_type(vocabulary):
                params = {"q": query, "size": 100}
                if vocabulary in CONTRIB_VOCABULARIES:
                    result = self._service(vocabulary).search(system_identity, params=params)
                else:
                    result = self._service(vocabulary).search(
                        system_identity, params=params, type=vocabulary
                    )
                hits = sorted(result.hits, key=lambda hit: hit["id"])
            self._searches[key] = hits
            for hit in hits:
                self._entries.setdefault((vocabulary, hit["id"]), hit)
        return self._searches[key]

    def by_field(
        self,
        vocabulary: str,
        field: str,
        phrase: str,
        matches: Callable[[str], bool],
    ) -> list[str]:
        """Ids of entries whose `field` (dotted, e.g. ``props.url``) passes `matches`,
        found by `phrase`. A field that holds a list passes when one of its items does."""
        escaped = phrase.replace("\\", "\\\\").replace('"', '\\"')
        found = []
        for hit in self.search(vocabulary, f'{field}:"{escaped}"'):
            values = _values_at(hit, field.split("."))
            if any(matches(str(value)) for value in values):
                found.append(hit["id"])
        return found

    def by_prop(
        self,
        vocabulary: str,
        prop: str,
        phrase: str,
        matches: Callable[[str], bool],
    ) -> list[str]:
        """Ids of entries whose ``props.<prop>`` passes `matches`, found by `phrase`."""
        return self.by_field(vocabulary, f"props.{prop}", phrase, matches)


def _values_at(entry: Any, path: list[str]) -> list[Any]:
    """The values at a dotted path of a vocabulary entry, through lists."""
    if not path:
        return entry if isinstance(entry, list) else [entry]
    if isinstance(entry, list):
        return [value for item in entry for value in _values_at(item, path)]
    if isinstance(entry, dict) and path[0] in entry:
        return _values_at(entry[path[0]], path[1:])
    return []


# -- what one run of an RDM transformer keeps -------------------------------------------------
class RDMTransformer:
    """The instance's settings, the vocabulary cache and the warnings of one run.

    ``last_warnings`` lists what the last ``transform`` could not map (a value is given up,
    never the record). One instance serves one run: the registry makes a new one per writer.
    A subclass sets ``name`` (its registry name, for messages) and calls :meth:`start` first
    in ``transform``.
    """

    name = "rdm"

    def __init__(
        self,
        default_resource_type: str | None = None,
        default_contributor_role: str | None = None,
    ) -> None:
        from flask import current_app

        require_rdm(self.name)
        config = current_app.config
        self.default_resource_type = default_resource_type or config[DEFAULT_RESOURCE_TYPE_KEY]
        self.default_contributor_role = (
            default_contributor_role or config[DEFAULT_CONTRIBUTOR_ROLE_KEY]
        )
        self.vocabularies = Vocabularies()
        self.last_warnings: list[str] = []
        self._doi_pids = external_doi_enabled(config)
        schemes = config.get("RDM_RECORDS_IDENTIFIERS_SCHEMES")
        self._identifier_schemes: Mapping[str, Any] | None = schemes or None
        related = config.get("RDM_RECORDS_RELATED_IDENTIFIERS_SCHEMES") or schemes
        self._related_schemes: Mapping[str, Any] | None = related or None

    def start(self) -> list[str]:
        """Begin a record: a record that fails must not show the warnings of the one before."""
        self.last_warnings = []
        return self.last_warnings

    def warn(self, message: str) -> None:
        self.last_warnings.append(message)

    # -- languages
    def language(self, value: str) -> str | None:
        """The ``languages`` id of a code (3- or 2-letter, bibliographic) or name, else None."""
        three, two = language_candidates(value)
        if three:
            if self.vocabularies.exists("languages", three):
                return three
            terminology = bibliographic_to_terminology(three)
            if terminology and self.vocabularies.exists("languages", terminology):
                return terminology
        if two:
            ids = self.vocabularies.by_prop("languages", "alpha_2", two, lambda v: v == two)
            if ids:
                return ids[0]
        return None

    # -- licenses
    def license_by_url(self, url: str) -> str | None:
        """The ``licenses`` id whose ``props.url`` is `url` (scheme, ``www.``, ``legalcode``
        and a trailing slash ignored), else None."""
        wanted = comparable_url(url)
        ids = self.vocabularies.by_prop(
            "licenses", "url", wanted, lambda v: comparable_url(v) == wanted
        )
        return ids[0] if ids else None

    # -- resource types
    def resource_type_by_keyword(self, value: str) -> str | None:
        """The resource type a DCMI term or a common free-text type names, else None."""
        for candidate in TYPE_KEYWORDS.get(type_keyword(value), ()):
            if self.vocabularies.exists("resourcetypes", candidate):
                return candidate
        return None

    def resource_type_by_eurepo(self, uri: str, term: str) -> str | None:
        """The resource type whose ``props.eurepo`` is `uri`.

        Several types share an eu-repo URI (``article``: journal and article): the one whose
        id ends in the term wins, then one that starts with it, then the first by id.
        """
        ids = self.vocabularies.by_prop("resourcetypes", "eurepo", uri, lambda v: v == uri)
        if not ids:
            return None
        lowered = term.lower()
        for predicate in (
            lambda id_: id_.split("-")[-1] == lowered,
            lambda id_: lowered.startswith(id_.split("-")[-1]),
        ):
            for id_ in ids:
                if predicate(id_):
                    return id_
        return ids[0]

    def resource_type_by_datacite(self, general: str, subtype: str = "") -> str | None:
        """The resource type whose ``props.datacite_general`` is `general` and whose
        ``props.datacite_type`` is `subtype` (case ignored; ``""`` for the general one)."""
        general, subtype = general.strip(), subtype.strip().lower()
        ids = self.vocabularies.by_prop(
            "resourcetypes", "datacite_general", general, lambda v: v.lower() == general.lower()
        )
        for id_ in ids:
            props = (self.vocabularies.entry("resourcetypes", id_) or {}).get("props", {})
            if str(props.get("datacite_type") or "").strip().lower() == subtype:
                return id_
        return None

    # -- access
    def file_access(self, term: str, access: dict[str, Any]) -> bool:
        """Set ``access.files`` from an eu-repo access term; False for an unknown term."""
        if term not in EUREPO_ACCESS:
            return False
        access["files"] = EUREPO_ACCESS[term]
        return True

    def embargo(self, until: str | None, source: str) -> dict[str, Any]:
        """``{"embargo": ...}`` for a future end date, else {} and a warning naming `source`.

        RDM refuses an active embargo without a future end date: a past or unknown end
        leaves the files restricted without one.
        """
        if until and len(until) == 10 and until > date.today().isoformat():
            return {"embargo": {"active": True, "until": until}}
        self.warn(f"{source}: files restricted, no embargo set.")
        return {}

    # -- identifiers
    def doi_as_pid(self, doi: str, data: dict[str, Any]) -> bool:
        """Make `doi` the record's ``pids.doi`` if the instance takes external DOIs and the
        record has none yet; False when it belongs in ``identifiers`` instead."""
        if "pids" in data or not self._doi_pids:
            return False
        # provider "external": the DOI is registered elsewhere; RDM must not mint.
        data["pids"] = {"doi": {"identifier": doi, "provider": "external"}}
        return True

    def detected_scheme(self, value: str, related: bool = False) -> str | None:
        """The scheme idutils detects for `value` among the instance's (related) schemes."""
        schemes = self._related_schemes if related else self._identifier_schemes
        return identifier_scheme(value, schemes)


def add_identifier(identifiers: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Append `entry` unless the same identifier is there (RDM refuses duplicates)."""
    if not any(same_identifier(entry, known) for known in identifiers):
        identifiers.append(entry)
