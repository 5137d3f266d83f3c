"""What one run of an InvenioRDM transformer keeps, and the look-ups its rules share.

Decision owned here: which settings of this instance an RDM transformer follows (the default
resource type and contributor role, what a record without a usable publication date becomes -
a transformer's option wins over the configuration -, whether external DOIs become
``pids.doi``, the identifier schemes), the stand-in publication date, how a value found in
harvested metadata is matched to this instance's vocabularies (languages, licenses, resource
types, DataCite terms, affiliations and funders), when a DOI becomes ``pids.doi``, and what an
eu-repo access term does to ``access``. :class:`RDMTransformer` holds the per-run vocabulary
cache and the warnings of the record being transformed; every rule of ``oai_dc_rdm`` and
``oai_datacite_rdm`` reads and writes through it, whichever metadata format it reads.

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..base import TransformError
from .helpers import (
    EUREPO_ACCESS,
    TYPE_KEYWORDS,
    bibliographic_to_terminology,
    comparable_url,
    display_name,
    doi_of,
    identifier_scheme,
    kebab,
    language_candidates,
    scheme_for_type,
    type_keyword,
    valid_for,
)
from .unique import unique_lists
from .vocabularies import Vocabularies

if TYPE_CHECKING:
    from ...protocol.records import OAIRecord
    from ..files import FileReference

DEFAULT_RESOURCE_TYPE_KEY = "OAI_HARVESTER_RDM_DEFAULT_RESOURCE_TYPE"
DEFAULT_CONTRIBUTOR_ROLE_KEY = "OAI_HARVESTER_RDM_DEFAULT_CONTRIBUTOR_ROLE"
MISSING_DATE_KEY = "OAI_HARVESTER_RDM_MISSING_DATE"
MISSING_CREATOR_KEY = "OAI_HARVESTER_RDM_MISSING_CREATOR"
UNKNOWN_CREATOR_KEY = "OAI_HARVESTER_RDM_UNKNOWN_CREATOR"


class MissingDate(StrEnum):
    """What becomes of a record none of whose dates RDM takes as its publication date."""

    DATESTAMP_YEAR = "datestamp-year"
    """Published with the year of its OAI datestamp, and a warning naming what was found."""
    FAIL = "fail"
    """Failed with a TransformError naming what was found."""


def _missing_date(value: str) -> MissingDate:
    """The configured (or optioned) value, refused when the run starts if it is no choice."""
    try:
        return MissingDate(value)
    except ValueError:
        choices = " or ".join(repr(choice.value) for choice in MissingDate)
        raise ValueError(
            f"{MISSING_DATE_KEY} (or the missing_date option) is {value!r}; expected {choices}."
        ) from None


class MissingCreatorChoice(StrEnum):
    """The named choices of what becomes of a record that names no creator (any other
    value of ``missing_creator`` is a fixed name)."""

    FAIL = "fail"
    """Failed with a TransformError: the record names no creator."""
    CONTRIBUTORS = "contributors"
    """Its contributors as creators, else the publisher or holder it names."""
    HOLDER = "holder"
    """The holding or publishing institution it names, as an organisation, else its
    contributors."""


@dataclass(frozen=True)
class MissingCreator:
    """A ``missing_creator`` value: one of the choices, or a fixed name."""

    choice: MissingCreatorChoice | None
    fixed_name: str | None = None

    @classmethod
    def parse(cls, value: str) -> MissingCreator:
        """`value` as a policy; ValueError for an empty one (it says nothing)."""
        text = " ".join(str(value).split())
        if not text:
            raise ValueError(
                f"missing_creator is empty; expected {MISSING_CREATOR_CHOICES} or a name."
            )
        try:
            return cls(MissingCreatorChoice(text.lower()))
        except ValueError:
            return cls(None, text)

    def __str__(self) -> str:
        return self.choice.value if self.choice else str(self.fixed_name)


MISSING_CREATOR_CHOICES = ", ".join(repr(choice.value) for choice in MissingCreatorChoice)


def configured_missing_creator(transformer_name: str, config: Mapping[str, Any]) -> str:
    """The configured ``missing_creator`` of the transformer registered as `transformer_name`
    (``fail`` for one the configuration does not name)."""
    configured = config.get(MISSING_CREATOR_KEY) or {}
    return str(configured.get(transformer_name) or MissingCreatorChoice.FAIL.value)


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


class RDMTransformer:
    """The instance's settings, the vocabulary cache and the warnings of one run.

    ``last_warnings`` lists what the last ``transform`` could not map (a value is given up,
    never the record), ``last_files`` the files it found (:mod:`..files`). One instance serves
    one run: the registry makes a new one per writer. A subclass sets ``name`` (its registry
    name, for messages and its configured defaults) and maps a record in :meth:`record_data`, which calls :meth:`new_record` first;
    :meth:`transform` then makes the lists RDM requires unique so.
    """

    name = "rdm"

    def __init__(
        self,
        default_resource_type: str | None = None,
        default_contributor_role: str | None = None,
        missing_date: str | None = None,
        missing_creator: str | None = None,
    ) -> None:
        from flask import current_app

        require_rdm(self.name)
        config = current_app.config
        self.default_resource_type = default_resource_type or config[DEFAULT_RESOURCE_TYPE_KEY]
        self.default_contributor_role = (
            default_contributor_role or config[DEFAULT_CONTRIBUTOR_ROLE_KEY]
        )
        self.missing_date = _missing_date(missing_date or config[MISSING_DATE_KEY])
        self.missing_creator = MissingCreator.parse(
            missing_creator or configured_missing_creator(self.name, config)
        )
        self.unknown_creator = config.get(UNKNOWN_CREATOR_KEY) or "Unknown"
        self.vocabularies = Vocabularies()
        self.last_warnings: list[str] = []
        self.last_files: list[FileReference] = []  # the record's files (transformers/files.py)
        self._doi_pids = external_doi_enabled(config)
        schemes = config.get("RDM_RECORDS_IDENTIFIERS_SCHEMES")
        self._identifier_schemes: Mapping[str, Any] | None = schemes or None
        related = config.get("RDM_RECORDS_RELATED_IDENTIFIERS_SCHEMES") or schemes
        self._related_schemes: Mapping[str, Any] | None = related or None

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """The record's data for RDM; TransformError when a field RDM requires is missing
        (and its policy says ``fail``)."""
        return unique_lists(self.record_data(record), self.warn)

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        raise NotImplementedError

    def new_record(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Begin a record: the data of a metadata-only record and its metadata, to fill. Its
        warnings start empty: a record that fails must not show those of the one before."""
        self.last_warnings = []
        self.last_files = []
        metadata: dict[str, Any] = {}
        return {"files": {"enabled": False}, "metadata": metadata}, metadata

    def warn(self, message: str) -> None:
        self.last_warnings.append(message)

    # -- the publication date
    def stand_in_publication_date(
        self, record: OAIRecord, source: str, unusable: Sequence[str], error: str
    ) -> str:
        """The publication date of a record none of whose dates (in `source`) RDM takes:
        the year of its OAI datestamp, with a warning naming the `unusable` values (or saying
        there were none); `error` as a TransformError when ``missing_date`` is ``fail`` or the
        datestamp has no year either.

        RDM requires a publication date, but one date it cannot parse must not lose a record
        whose every other value maps (what cannot be mapped is a warning, never a lost record).
        The datestamp is when the provider last changed the record: its year is the nearest
        fact at hand, and the warning says that it stands in for one.
        """
        datestamp = record.datestamp_value
        if self.missing_date is MissingDate.FAIL or datestamp is None:
            raise TransformError(error)
        year = f"{datestamp.year:04d}"
        found = (
            f"no EDTF level 0 date in {source} ({', '.join(map(repr, unusable))})"
            if unusable
            else f"no {source}"
        )
        self.warn(
            f"Publication date: {found}; using {year}, the year of the record's datestamp "
            f"{record.datestamp}."
        )
        return year

    # -- creators
    def stand_in_creators(
        self,
        record: OAIRecord,
        source: str,
        *,
        makers: Sequence[Mapping[str, Any]] = (),
        contributors: Sequence[Mapping[str, Any]] = (),
        holders: Sequence[str] = (),
        error: str,
    ) -> list[dict[str, Any]]:
        """The creators of a record that names none in `source`, as ``missing_creator``
        says: `makers` first whatever the choice (those who took part in making it in
        another role, such as a museum object's producer), then its `contributors` and its
        `holders` (names of the holding or publishing institutions) in the order the choice
        gives, then the fixed name; a warning says which. Entries are creators' or
        contributors' (``person_or_org``, affiliations kept, a role dropped: creators' roles
        are another vocabulary). `error` as a TransformError when the choice is ``fail``.

        RDM requires a creator, and a museum's anonymous coin or a thesis that names only its
        advisers is still a record: the people and bodies the record does name are the
        nearest facts at hand, and the warning says they stand in for a creator.
        """
        policy = self.missing_creator
        if policy.choice is MissingCreatorChoice.FAIL:
            raise TransformError(error)
        organisations = [
            {"person_or_org": {"type": "organizational", "name": name}}
            for name in dict.fromkeys(name for name in holders if name)
        ]
        people, involved = (
            [{k: v for k, v in entry.items() if k != "role"} for entry in found]
            for found in (contributors, makers)
        )
        kinds = [("those who made it in another role", involved)]
        kinds += (
            [("its contributors", people), ("its holder or publisher", organisations)]
            if policy.choice is MissingCreatorChoice.CONTRIBUTORS
            else [("its holder or publisher", organisations), ("its contributors", people)]
        )
        if policy.choice is not None:
            for label, found in kinds:
                if found:
                    shown = ", ".join(repr(display_name(e["person_or_org"])) for e in found)
                    self.warn(
                        f"Creators: no {source}; using {label} as creators ({shown}; "
                        f"missing_creator {policy})."
                    )
                    return found
        name = policy.fixed_name or self.unknown_creator
        nobody = "" if policy.fixed_name else " and no contributor, publisher or holder"
        self.warn(f"Creators: no {source}{nobody}; using {name!r} (missing_creator {policy}).")
        return [{"person_or_org": {"type": "organizational", "name": name}}]

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

    # -- DataCite terms and organisations
    def datacite_term(self, vocabulary: str, term: str) -> str | None:
        """The id of the entry whose ``props.datacite`` is `term` (``ContactPerson`` ->
        ``contactperson``), else of the id RDM derives from the term, if it exists."""
        term = term.strip()
        if not term:
            return None
        lowered = term.lower()
        ids = self.vocabularies.by_prop(
            vocabulary, "datacite", term, lambda v: v.lower() == lowered
        )
        if ids:
            return ids[0]
        for candidate in dict.fromkeys((lowered, kebab(term))):
            if self.vocabularies.exists(vocabulary, candidate):
                return candidate
        return None

    def organisation_id(self, vocabulary: str, identifier: str, kind: str) -> str | None:
        """The id of an affiliation or funder: a ROR is the id itself, any other
        identifier (ISNI, GRID, Crossref Funder ID) is found among the entries' identifiers."""
        import idutils

        if kind.lower() == "ror" or (not kind and idutils.is_ror(identifier)):
            ror = idutils.normalize_ror(identifier) if idutils.is_ror(identifier) else None
            return ror if ror and self.vocabularies.exists(vocabulary, ror) else None
        wanted = doi_of(identifier) or identifier
        ids = self.vocabularies.by_field(
            vocabulary, "identifiers.identifier", wanted, lambda v: v.lower() == wanted.lower()
        )
        return ids[0] if ids else None

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

    def typed_scheme(self, value: str, datacite_type: str, related: bool = False) -> str | None:
        """The RDM scheme of a typed identifier: its type's scheme if the value is valid for
        it, else the scheme idutils detects (a DOI typed ``URL`` is still a DOI)."""
        schemes = (self._related_schemes if related else self._identifier_schemes) or {}
        typed = scheme_for_type(datacite_type, schemes)
        if typed and valid_for(schemes, typed, value):
            return typed
        return self.detected_scheme(value, related)
