"""``oai_dc`` -> InvenioRDM record data (the ``oai_dc_rdm`` transformer).

Decision owned here: what each Dublin Core element becomes in an RDM record, and which values
are given up with a warning. Dublin Core is flat and mostly free text while RDM references
vocabularies by id, so every emitted id is looked up first: RDM refuses an unknown id outright
(``InvalidRelationValue``, no draft), which would lose the whole record for one bad value.
Only the fields RDM itself requires (title, creator, publication date) make a record fail,
with a :class:`TransformError` naming what is missing.

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
It is one module because every element's rule shares one per-run vocabulary cache and one
warning list; the rules follow each other in the order of the README's mapping table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date
from typing import TYPE_CHECKING, Any

from .transformers import DublinCoreTransformer, TransformError

if TYPE_CHECKING:
    from ..protocol.records import OAIRecord

DEFAULT_RESOURCE_TYPE_KEY = "OAI_HARVESTER_RDM_DEFAULT_RESOURCE_TYPE"
DEFAULT_CONTRIBUTOR_ROLE_KEY = "OAI_HARVESTER_RDM_DEFAULT_CONTRIBUTOR_ROLE"

EUREPO_SEMANTICS = "info:eu-repo/semantics/"
EUREPO_EMBARGO_END = "info:eu-repo/date/embargoEnd/"

# access.files for each eu-repo access right. The record itself stays public: the source
# published its metadata over OAI-PMH, and a harvested record is metadata only.
EUREPO_ACCESS: dict[str, str] = {
    "openAccess": "public",
    "closedAccess": "restricted",
    "embargoedAccess": "restricted",
    "restrictedAccess": "restricted",
}

# eu-repo version and other non-type terms that providers put in dc:type: not a resource
# type, so they neither match nor warn.
EUREPO_VERSIONS = frozenset(
    {
        "draft",
        "submittedVersion",
        "acceptedVersion",
        "publishedVersion",
        "updatedVersion",
    }
)

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

RELATION_TYPES = ("isrelatedto", "other")  # relation types tried for dc:relation, in order

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
    """(3-letter candidate, 2-letter candidate) of a dc:language value.

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


# -- vocabulary look-ups ----------------------------------------------------------------------
class Vocabularies:
    """Look-ups in this instance's vocabularies, cached for the life of the object (one run).

    Through the vocabularies service with the system identity, as any other reader would.
    A search is only a candidate list: the exact comparison is made here, because ``props``
    are dynamically mapped text fields.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._searches: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._types: dict[str, bool] = {}

    @staticmethod
    def _service() -> Any:
        from invenio_vocabularies.proxies import current_service

        return current_service

    def has_type(self, vocabulary: str) -> bool:
        if vocabulary not in self._types:
            from invenio_vocabularies.records.models import VocabularyType

            self._types[vocabulary] = (
                VocabularyType.query.filter_by(id=vocabulary).one_or_none() is not None
            )
        return self._types[vocabulary]

    def entry(self, vocabulary: str, id_: str) -> dict[str, Any] | None:
        """The entry `id_` of `vocabulary`, None if there is none."""
        key = (vocabulary, id_)
        if key not in self._entries:
            from invenio_access.permissions import system_identity
            from invenio_pidstore.errors import PIDDoesNotExistError

            result: dict[str, Any] | None = None
            if self.has_type(vocabulary):
                try:
                    result = self._service().read(system_identity, (vocabulary, id_)).to_dict()
                except PIDDoesNotExistError:
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
                result = self._service().search(
                    system_identity, params={"q": query, "size": 100}, type=vocabulary
                )
                hits = sorted(result.hits, key=lambda hit: hit["id"])
            self._searches[key] = hits
            for hit in hits:
                self._entries.setdefault((vocabulary, hit["id"]), hit)
        return self._searches[key]

    def by_prop(
        self,
        vocabulary: str,
        prop: str,
        phrase: str,
        matches: Callable[[str], bool],
    ) -> list[str]:
        """Ids of entries whose ``props.<prop>`` passes `matches`, found by `phrase`."""
        escaped = phrase.replace("\\", "\\\\").replace('"', '\\"')
        hits = self.search(vocabulary, f'props.{prop}:"{escaped}"')
        return [hit["id"] for hit in hits if matches(str(hit.get("props", {}).get(prop, "")))]


# -- the transformer --------------------------------------------------------------------------
class DublinCoreRDMTransformer:
    """An ``oai_dc`` record as the data of a metadata-only InvenioRDM record.

    ``last_warnings`` lists what the last ``transform`` could not map (a value is given up,
    never the record). One instance serves one run: the registry makes a new one per writer.
    """

    def __init__(
        self,
        default_resource_type: str | None = None,
        default_contributor_role: str | None = None,
    ) -> None:
        from importlib.util import find_spec

        from flask import current_app

        if find_spec("invenio_rdm_records") is None:
            # The entry point exists in every install; say so once, at the start of the run,
            # rather than an ImportError on every record.
            raise RuntimeError(
                "The oai_dc_rdm transformer needs InvenioRDM: "
                "pip install oarepo-oaipmh-harvester[rdm]."
            )
        config = current_app.config
        self.default_resource_type = default_resource_type or config.get(
            DEFAULT_RESOURCE_TYPE_KEY, "publication"
        )
        self.default_contributor_role = default_contributor_role or config.get(
            DEFAULT_CONTRIBUTOR_ROLE_KEY, "other"
        )
        self.vocabularies = Vocabularies()
        self.last_warnings: list[str] = []
        self._doi_pids = _external_doi_enabled(config)
        schemes = config.get("RDM_RECORDS_IDENTIFIERS_SCHEMES")
        self._identifier_schemes = set(schemes) if schemes else None
        related = config.get("RDM_RECORDS_RELATED_IDENTIFIERS_SCHEMES") or schemes
        self._related_schemes = set(related) if related else None

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """Raise TransformError when a field RDM requires is missing or unusable."""
        # Reset first: a record that fails must not show the warnings of the one before.
        self.last_warnings = warnings = []
        dc = DublinCoreTransformer().transform(record)["metadata"]
        metadata: dict[str, Any] = {}
        data: dict[str, Any] = {"files": {"enabled": False}, "metadata": metadata}

        self._titles(dc.get("title", []), metadata, record)
        self._creators(dc.get("creator", []), metadata, record)
        self._contributors(dc.get("contributor", []), metadata)
        embargo_until = self._dates(dc.get("date", []), metadata, record)
        metadata["resource_type"] = {"id": self._resource_type(dc.get("type", []))}
        self._languages(dc.get("language", []), metadata)
        data["access"] = self._rights(dc.get("rights", []), metadata, embargo_until)
        self._identifiers(dc.get("identifier", []), data, record)
        self._descriptions(dc.get("description", []), metadata)
        self._relations(dc.get("relation", []), metadata)
        if dc.get("subject"):
            metadata["subjects"] = [{"subject": subject} for subject in dc["subject"]]
        publishers = dc.get("publisher", [])
        if publishers:
            metadata["publisher"] = publishers[0]
            for other in publishers[1:]:
                warnings.append(f"dc:publisher {other!r}: RDM keeps one publisher; dropped.")
        for element in ("format", "source", "coverage"):
            for value in dc.get(element, []):
                warnings.append(f"dc:{element} {value!r}: no RDM field is mapped; dropped.")
        return data

    # -- required fields
    def _titles(self, titles: list[str], metadata: dict[str, Any], record: OAIRecord) -> None:
        if not titles:
            raise TransformError(f"Record {record.identifier} has no dc:title (RDM needs one).")
        metadata["title"] = titles[0]
        if len(titles) > 1:
            if self.vocabularies.exists("titletypes", "alternative-title"):
                metadata["additional_titles"] = [
                    {"title": title, "type": {"id": "alternative-title"}} for title in titles[1:]
                ]
            else:
                self.last_warnings.extend(
                    f"dc:title {title!r}: no title type 'alternative-title'; dropped."
                    for title in titles[1:]
                )

    def _creators(self, names: list[str], metadata: dict[str, Any], record: OAIRecord) -> None:
        if not names:
            raise TransformError(
                f"Record {record.identifier} has no dc:creator (RDM needs at least one)."
            )
        metadata["creators"] = [{"person_or_org": person_or_org(name)} for name in names]

    def _contributors(self, names: list[str], metadata: dict[str, Any]) -> None:
        if not names:
            return
        role = self.default_contributor_role
        if not self.vocabularies.exists("contributorsroles", role):
            # RDM requires a role on every contributor: without one they cannot be kept.
            self.last_warnings.extend(
                f"dc:contributor {name!r}: contributor role {role!r} is not in the "
                f"contributorsroles vocabulary; dropped."
                for name in names
            )
            return
        metadata["contributors"] = [
            {"person_or_org": person_or_org(name), "role": {"id": role}} for name in names
        ]

    def _dates(self, values: list[str], metadata: dict[str, Any], record: OAIRecord) -> str | None:
        """Publication date and other dates; returns an eu-repo embargo end, if any."""
        embargo_until = None
        others: list[str] = []
        for value in values:
            if value.startswith(EUREPO_EMBARGO_END):
                embargo_until = level0_date(value[len(EUREPO_EMBARGO_END) :])
                continue
            if value.startswith("info:eu-repo/date/"):
                value = value.rsplit("/", 1)[-1]  # info:eu-repo/date/<kind>/<date>
            parsed = level0_date(value)
            if parsed is None:
                self.last_warnings.append(f"dc:date {value!r}: not an EDTF level 0 date; dropped.")
            elif "publication_date" not in metadata:
                metadata["publication_date"] = parsed
            else:
                others.append(parsed)
        if "publication_date" not in metadata:
            raise TransformError(
                f"Record {record.identifier} has no dc:date in EDTF form "
                f"(RDM needs a publication date); found {values!r}."
            )
        if others and self.vocabularies.exists("datetypes", "other"):
            metadata["dates"] = [
                {"date": other, "type": {"id": "other"}, "description": "dc:date"}
                for other in others
            ]
        else:
            self.last_warnings.extend(
                f"dc:date {other!r}: no date type 'other' in the datetypes vocabulary; dropped."
                for other in others
            )
        return embargo_until

    # -- vocabularies
    def _resource_type(self, values: list[str]) -> str:
        unmatched: list[str] = []
        fallback: str | None = None  # info:eu-repo/semantics/other: a last resort only
        for value in values:
            term = eurepo_term(value)
            if term in EUREPO_VERSIONS:
                continue
            if term is not None:
                found = self._eurepo_type(value.strip(), term)
                if found and term != "other":
                    return found
                fallback = fallback or found
                if not found:
                    unmatched.append(value)
                continue
            for candidate in TYPE_KEYWORDS.get(_keyword(value), ()):
                if self.vocabularies.exists("resourcetypes", candidate):
                    return candidate
            unmatched.append(value)
        if fallback:
            return fallback
        default = self.default_resource_type
        if unmatched:
            self.last_warnings.append(
                f"dc:type {', '.join(map(repr, unmatched))}: no matching resource type; "
                f"using the default {default!r}."
            )
        else:  # none at all, or only eu-repo version terms
            self.last_warnings.append(
                f"No dc:type names a resource type; using the default {default!r}."
            )
        return default

    def _eurepo_type(self, uri: str, term: str) -> str | None:
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

    def _languages(self, values: list[str], metadata: dict[str, Any]) -> None:
        languages: list[dict[str, str]] = []
        for value in values:
            found = self._language(value)
            if found is None:
                self.last_warnings.append(
                    f"dc:language {value!r}: not in the languages vocabulary; dropped."
                )
            elif {"id": found} not in languages:
                languages.append({"id": found})
        if languages:
            metadata["languages"] = languages

    def _language(self, value: str) -> str | None:
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

    def _rights(
        self, values: list[str], metadata: dict[str, Any], embargo_until: str | None
    ) -> dict[str, Any]:
        access: dict[str, Any] = {"record": "public", "files": "public"}
        rights: list[dict[str, Any]] = []
        for value in values:
            term = eurepo_term(value)
            if term is not None:
                if term not in EUREPO_ACCESS:
                    self.last_warnings.append(f"dc:rights {value!r}: unknown eu-repo access term.")
                    continue
                access["files"] = EUREPO_ACCESS[term]
                if term == "embargoedAccess":
                    access.update(self._embargo(embargo_until))
                continue
            license_id = self._license(value) if re.match(r"^https?://", value.strip()) else None
            entry = {"id": license_id} if license_id else {"title": {"en": value}}
            if entry not in rights:
                rights.append(entry)
        if rights:
            metadata["rights"] = rights
        return access

    def _embargo(self, until: str | None) -> dict[str, Any]:
        # RDM refuses an active embargo without a future end date: a past or unknown end
        # leaves the files restricted without one.
        if until and len(until) == 10 and until > date.today().isoformat():
            return {"embargo": {"active": True, "until": until}}
        self.last_warnings.append(
            "dc:rights embargoedAccess without a future info:eu-repo/date/embargoEnd date: "
            "files restricted, no embargo set."
        )
        return {}

    def _license(self, url: str) -> str | None:
        wanted = comparable_url(url)
        ids = self.vocabularies.by_prop(
            "licenses", "url", wanted, lambda v: comparable_url(v) == wanted
        )
        return ids[0] if ids else None

    # -- identifiers
    def _identifiers(self, values: list[str], data: dict[str, Any], record: OAIRecord) -> None:
        identifiers: list[dict[str, str]] = []
        for value in values:
            doi = doi_of(value)
            if doi and "pids" not in data and self._doi_pids:
                # provider "external": the DOI is registered elsewhere; RDM must not mint.
                data["pids"] = {"doi": {"identifier": doi, "provider": "external"}}
                continue
            if doi and doi.lower() == _pid_doi(data):
                continue  # the same DOI written another way (doi:, https://doi.org/)
            if value.strip() == record.identifier:
                continue  # the OAI identifier is the tracking row's, not the record's
            scheme = "doi" if doi else identifier_scheme(value, self._identifier_schemes)
            if scheme is None:
                self.last_warnings.append(f"dc:identifier {value!r}: scheme unknown; dropped.")
                continue
            entry = {"identifier": doi or value.strip(), "scheme": scheme}
            # DOIs are case-insensitive: one written twice is kept once.
            if not any(_same_identifier(entry, known) for known in identifiers):
                identifiers.append(entry)
        if identifiers:
            data["metadata"]["identifiers"] = identifiers

    def _relations(self, values: list[str], metadata: dict[str, Any]) -> None:
        if not values:
            return
        # dc:relation says only "related"; RDM's relation types (DataCite 4.5) have no
        # IsRelatedTo, but an instance may add it, and DataCite's "Other" is the honest rest.
        relation = next(
            (r for r in RELATION_TYPES if self.vocabularies.exists("relationtypes", r)), None
        )
        if relation is None:
            self.last_warnings.extend(
                f"dc:relation {value!r}: no relation type {' or '.join(RELATION_TYPES)}; dropped."
                for value in values
            )
            return
        related: list[dict[str, Any]] = []
        for value in values:
            doi = doi_of(value)
            scheme = "doi" if doi else identifier_scheme(value, self._related_schemes)
            if scheme is None:
                self.last_warnings.append(f"dc:relation {value!r}: scheme unknown; dropped.")
                continue
            related.append(
                {
                    "identifier": doi or value.strip(),
                    "scheme": scheme,
                    "relation_type": {"id": relation},
                }
            )
        if related:
            metadata["related_identifiers"] = related

    def _descriptions(self, values: list[str], metadata: dict[str, Any]) -> None:
        if not values:
            return
        metadata["description"] = values[0]
        rest = values[1:]
        if not rest:
            return
        kind = next(
            (k for k in ("other", "abstract") if self.vocabularies.exists("descriptiontypes", k)),
            None,
        )
        if kind is None:
            self.last_warnings.extend(
                f"dc:description {value[:40]!r}...: no description type; dropped." for value in rest
            )
            return
        metadata["additional_descriptions"] = [
            {"description": value, "type": {"id": kind}} for value in rest
        ]


def _keyword(value: str) -> str:
    """A free-text type as a TYPE_KEYWORDS key: lower case, single spaces, no DCMI URI."""
    value = value.strip().removeprefix("http://purl.org/dc/dcmitype/")
    return " ".join(value.lower().replace("_", " ").split())


def _same_identifier(one: dict[str, str], other: dict[str, str]) -> bool:
    if one["scheme"] != other["scheme"]:
        return False
    if one["scheme"] == "doi":
        return one["identifier"].lower() == other["identifier"].lower()
    return one["identifier"] == other["identifier"]


def _pid_doi(data: dict[str, Any]) -> str | None:
    doi = data.get("pids", {}).get("doi", {}).get("identifier")
    return doi.lower() if doi else None


def _external_doi_enabled(config: Any) -> bool:
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
