"""``oai_datacite`` / ``datacite`` -> InvenioRDM record data (the ``oai_datacite_rdm`` transformer).

Decision owned here: what each element of a DataCite metadata kernel 4 resource (4.0-4.5; the
kernel-3 forms where they are cheap to read) becomes in an RDM record, and which values are
given up with a warning. The resource comes bare (the ``datacite`` format) or in the
``oai_datacite`` envelope (``payload/resource``, as invenio-oaiserver serves RDM records).
Elements are matched by local name, so the kernel version's namespace does not matter.

DataCite is what RDM's own model follows, so most values have an exact home; the vocabulary
ids are still looked up before they are emitted (RDM refuses an unknown id with no draft at
all), and a value this instance cannot hold is a warning, never a failed record. Only the
fields RDM requires (title, creator, publication date) make a record fail, with a
:class:`TransformError` naming what is missing.

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
It is one module because every element's rule shares one per-run vocabulary cache and one
warning list (:class:`.rdm_common.RDMTransformer`); the rules follow each other in the order
of the README's mapping table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape
from typing import TYPE_CHECKING, Any

from lxml import etree

from .rdm_common import (
    RDMTransformer,
    add_identifier,
    comparable_url,
    doi_of,
    eurepo_term,
    level0_date,
    person_or_org,
    pid_doi,
)
from .transformers import TransformError

if TYPE_CHECKING:
    from ..protocol.records import OAIRecord

DATACITE_KERNEL = "http://datacite.org/schema/kernel-"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

# RDM's DataCite serializer writes the copyright statement as rights with this URI.
COPYRIGHT_URI = "http://rightsstatements.org/vocab/InC/1.0/"

MAPPED = frozenset(
    {
        "identifier",
        "creators",
        "titles",
        "publisher",
        "publicationYear",
        "resourceType",
        "subjects",
        "contributors",
        "dates",
        "language",
        "alternateIdentifiers",
        "relatedIdentifiers",
        "sizes",
        "formats",
        "version",
        "rightsList",
        "descriptions",
        "geoLocations",
        "fundingReferences",
    }
)
"""Top-level elements with a rule here; any other one is dropped with a warning."""

VERSION_MAX_LENGTH = 191  # RDM's limit on metadata.version


# -- reading the XML (no application needed) -------------------------------------------------
def localname(element: etree._Element) -> str:
    return etree.QName(element).localname


def children(parent: etree._Element | None, *path: str) -> list[etree._Element]:
    """The elements at `path` (local names) below `parent`, in document order."""
    found = [parent] if parent is not None else []
    for name in path:
        found = [
            child
            for element in found
            for child in element
            if isinstance(child.tag, str) and localname(child) == name
        ]
    return found


def text_of(element: etree._Element | None, as_html: bool = False) -> str:
    """The element's text, stripped; `as_html` for RDM's HTML fields (descriptions): the
    text escaped and a ``<br/>`` kept as a line break."""
    if element is None:
        return ""
    if not as_html:
        return "".join(element.itertext()).strip()
    parts = [escape(element.text or "", quote=False)]
    for child in element:
        if isinstance(child.tag, str):
            is_break = localname(child) == "br"
            parts.append("<br>" if is_break else escape("".join(child.itertext()), quote=False))
        parts.append(escape(child.tail or "", quote=False))
    return "".join(parts).strip()


def first_text(parent: etree._Element | None, *path: str) -> str:
    found = children(parent, *path)
    return text_of(found[0]) if found else ""


def attribute(element: etree._Element, name: str) -> str:
    return (element.get(name) or "").strip()


def language_attribute(element: etree._Element) -> str:
    # The datacite library writes xml:lang in a namespace of its own ("xml") in memory.
    return (element.get(XML_LANG) or element.get("{xml}lang") or "").strip()


def datacite_resource(metadata: etree._Element | None, identifier: str) -> etree._Element:
    """The DataCite ``resource`` of a record: the element itself, or the one in the
    ``payload`` of an ``oai_datacite`` envelope."""
    if metadata is None:
        raise TransformError(f"Record {identifier} has no metadata to transform.")
    resource = metadata
    if localname(metadata) == "oai_datacite":
        found = [child for child in children(metadata, "payload") for child in child]
        resource = next((child for child in found if isinstance(child.tag, str)), None)
    namespace = etree.QName(resource).namespace if resource is not None else None
    if (
        resource is None
        or localname(resource) != "resource"
        or not (namespace is None or namespace.startswith(DATACITE_KERNEL))
    ):
        found_tag = resource.tag if resource is not None else None
        raise TransformError(
            f"Record {identifier} has no DataCite resource in its metadata "
            f"(root element {metadata.tag!r}, resource {found_tag!r})."
        )
    return resource


def kebab(term: str) -> str:
    """``SeriesInformation`` -> ``series-information`` (RDM's ids for DataCite's terms)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", term.strip()).lower()


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


def coordinate(value: str, limit: float) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if -limit <= number <= limit else None


# -- the transformer --------------------------------------------------------------------------
class DataCiteRDMTransformer(RDMTransformer):
    """A DataCite kernel 4 resource as the data of a metadata-only InvenioRDM record."""

    name = "oai_datacite_rdm"

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """The record's data; TransformError for a missing title, creator or date."""
        self.start()
        resource = datacite_resource(record.metadata, record.identifier)
        metadata: dict[str, Any] = {}
        data: dict[str, Any] = {"files": {"enabled": False}, "metadata": metadata}

        self._titles(resource, metadata, record)
        self._creators(resource, metadata, record)
        self._contributors(resource, metadata)
        embargo_until = self._dates(resource, metadata, record)
        metadata["resource_type"] = {"id": self._resource_type(resource)}
        self._languages(resource, metadata)
        data["access"] = self._rights(resource, metadata, embargo_until)
        self._identifiers(resource, data, record)
        self._related_identifiers(resource, metadata)
        self._subjects(resource, metadata)
        self._descriptions(resource, metadata)
        self._plain_values(resource, metadata)
        self._funding(resource, metadata)
        self._locations(resource, metadata)
        for element in resource:
            if isinstance(element.tag, str) and localname(element) not in MAPPED:
                self.warn(f"<{localname(element)}>: no RDM field is mapped; dropped.")
        return data

    # -- required fields
    def _titles(
        self, resource: etree._Element, metadata: dict[str, Any], record: OAIRecord
    ) -> None:
        titles = [title for title in children(resource, "titles", "title") if text_of(title)]
        main = next((title for title in titles if not attribute(title, "titleType")), None)
        main = main if main is not None else (titles[0] if titles else None)
        if main is None or len(text_of(main)) < 3:
            found = repr(text_of(main)) if main is not None else "none"
            raise TransformError(
                f"Record {record.identifier} has no title of at least 3 characters "
                f"(RDM needs one); found {found}."
            )
        metadata["title"] = text_of(main)
        additional = []
        for title in titles:
            if title is main:
                continue
            kind = attribute(title, "titleType") or "AlternativeTitle"
            entry = self._additional("title", title, text_of(title), kind)
            if entry:
                additional.append(entry)
        if additional:
            metadata["additional_titles"] = additional

    def _creators(
        self, resource: etree._Element, metadata: dict[str, Any], record: OAIRecord
    ) -> None:
        creators = []
        for element in children(resource, "creators", "creator"):
            creator = self._person(element, "creator")
            if creator is not None:
                creators.append(creator)
        if not creators:
            raise TransformError(
                f"Record {record.identifier} has no DataCite creator with a name "
                f"(RDM needs at least one)."
            )
        metadata["creators"] = creators

    def _contributors(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        contributors = []
        for element in children(resource, "contributors", "contributor"):
            kind = attribute(element, "contributorType")
            if kind == "Funder":  # kernel 3: funders were contributors
                self._funder_contributor(element, metadata)
                continue
            person = self._person(element, "contributor")
            if person is None:
                continue
            label = f"contributor {first_text(element, 'contributorName')!r}"
            role = self._datacite_term("contributorsroles", kind) if kind else None
            if role is None:
                role = self.default_contributor_role
                if not self.vocabularies.exists("contributorsroles", role):
                    # RDM requires a role on every contributor: without one they cannot be kept.
                    self.warn(
                        f"{label}: no contributor role {kind or 'given'} nor {role!r}; dropped."
                    )
                    continue
                self.warn(f"{label}: no contributor role {kind or 'given'}; using {role!r}.")
            contributors.append({**person, "role": {"id": role}})
        if contributors:
            metadata["contributors"] = contributors

    def _dates(
        self, resource: etree._Element, metadata: dict[str, Any], record: OAIRecord
    ) -> str | None:
        """Publication date and other dates; returns the Available date (an embargo's end)."""
        available = None
        dates = []
        for element in children(resource, "dates", "date"):
            value, kind = text_of(element), attribute(element, "dateType") or "Other"
            parsed = level0_date(value)
            if parsed is None:
                self.warn(f"date {value!r} ({kind}): not an EDTF level 0 date; dropped.")
                continue
            if kind.lower() == "issued" and "publication_date" not in metadata:
                metadata["publication_date"] = parsed
                continue
            if kind.lower() == "available" and available is None:
                available = parsed
            entry: dict[str, Any] = {"date": parsed}
            type_id = self._datacite_term("datetypes", kind)
            if type_id is None and self.vocabularies.exists("datetypes", "other"):
                type_id = "other"
                self.warn(f"date {value!r}: no date type {kind}; kept as 'other'.")
            elif type_id is None:
                self.warn(f"date {value!r}: no date type {kind} nor 'other'; dropped.")
                continue
            entry["type"] = {"id": type_id}
            if attribute(element, "dateInformation"):
                entry["description"] = attribute(element, "dateInformation")
            dates.append(entry)
        if "publication_date" not in metadata:
            year = first_text(resource, "publicationYear")
            if level0_date(year) and len(year) == 4:
                metadata["publication_date"] = year
            else:
                raise TransformError(
                    f"Record {record.identifier} has no publication date: no Issued date in "
                    f"EDTF form and no publicationYear (RDM needs one); found {year!r}."
                )
        if dates:
            metadata["dates"] = dates
        return available

    # -- names
    def _person(self, element: etree._Element, role: str) -> dict[str, Any] | None:
        """A creator or contributor: person or organisation, identifiers, affiliations."""
        name_element = next(iter(children(element, f"{role}Name")), None)
        name = text_of(name_element)
        given, family = first_text(element, "givenName"), first_text(element, "familyName")
        label = f"{role} {name or family!r}"
        identifiers = self._name_identifiers(element, label)
        name_type = attribute(name_element, "nameType").lower() if name_element is not None else ""
        schemes = {identifier["scheme"] for identifier in identifiers}
        if not name_type:
            # Kernel 3 and careless providers leave it out: the name parts, an ORCID or a ROR
            # say which it is, else the "Family, Given" form does (as for Dublin Core).
            if given or family or "orcid" in schemes:
                name_type = "personal"
            elif "ror" in schemes:
                name_type = "organizational"
            else:
                name_type = person_or_org(name)["type"] if name else ""
        if not (name or family):
            self.warn(f"{role} without a name; dropped.")
            return None
        if name_type == "organizational":
            person: dict[str, Any] = {"type": "organizational", "name": name or family}
        else:
            person = {"type": "personal", **self._personal_name(name, given, family)}
        if identifiers:
            person["identifiers"] = identifiers
        entry: dict[str, Any] = {"person_or_org": person}
        affiliations = self._affiliations(element, label)
        if affiliations:
            entry["affiliations"] = affiliations
        return entry

    @staticmethod
    def _personal_name(name: str, given: str, family: str) -> dict[str, str]:
        if not family:
            inverted_family, comma, inverted_given = (part.strip() for part in name.partition(","))
            if comma and inverted_family:
                family, given = inverted_family, given or inverted_given
            elif given and name.startswith(given + " "):
                family = name[len(given) :].strip()
            else:
                family = name  # no way to tell the parts apart: all of it, nothing lost
        parts = {"family_name": family}
        if given:
            parts["given_name"] = given
        return parts

    def _name_identifiers(self, element: etree._Element, label: str) -> list[dict[str, str]]:
        import idutils
        from flask import current_app

        schemes = current_app.config.get("RDM_RECORDS_PERSONORG_SCHEMES") or {}
        identifiers: list[dict[str, str]] = []
        for found in children(element, "nameIdentifier"):
            value, kind = text_of(found), attribute(found, "nameIdentifierScheme")
            scheme = scheme_for_type(kind, schemes)
            if not value or scheme is None or not valid_for(schemes, scheme, value):
                self.warn(
                    f"{label}: nameIdentifier {value!r} ({kind}) is not one RDM takes; dropped."
                )
                continue
            if any(known["scheme"] == scheme for known in identifiers):
                self.warn(f"{label}: a second {kind} {value!r}; RDM keeps one per scheme; dropped.")
                continue
            identifiers.append(
                {"scheme": scheme, "identifier": idutils.normalize_pid(value, scheme)}
            )
        return identifiers

    def _affiliations(self, element: etree._Element, label: str) -> list[dict[str, str]]:
        affiliations: list[dict[str, str]] = []
        for found in children(element, "affiliation"):
            name = text_of(found)
            identifier = attribute(found, "affiliationIdentifier")
            kind = attribute(found, "affiliationIdentifierScheme")
            id_ = self._organisation_id("affiliations", identifier, kind) if identifier else None
            if identifier and id_ is None:
                self.warn(
                    f"{label}: affiliation identifier {identifier!r} is not in the affiliations "
                    f"vocabulary; {'kept the name' if name else 'dropped'}."
                )
            entry = {"id": id_} if id_ else {}
            if name:
                entry["name"] = name
            # RDM refuses the same affiliation twice (compared by name, else by id).
            key = entry.get("name", id_)
            if entry and all(known.get("name", known.get("id")) != key for known in affiliations):
                affiliations.append(entry)
        return affiliations

    def _organisation_id(self, vocabulary: str, identifier: str, kind: str) -> str | None:
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

    # -- vocabularies
    def _datacite_term(self, vocabulary: str, term: str) -> str | None:
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

    def _resource_type(self, resource: etree._Element) -> str:
        found = children(resource, "resourceType")
        general = attribute(found[0], "resourceTypeGeneral") if found else ""
        subtype = text_of(found[0]) if found else ""
        if general:
            exact = self.resource_type_by_datacite(general, subtype)
            if exact:
                return exact
        if subtype:
            keyword = self.resource_type_by_keyword(subtype)
            if keyword and self._agrees_with(keyword, general):
                return keyword
        if general:
            general_only = self.resource_type_by_datacite(general)
            if general_only:
                if subtype:
                    self.warn(
                        f"resourceType {subtype!r}: no resource type of {general} has it; "
                        f"using {general_only!r}."
                    )
                return general_only
        default = self.default_resource_type
        shown = " ".join(filter(None, (general, repr(subtype) if subtype else "")))
        self.warn(
            f"resourceType {shown or 'missing'}: no matching resource type; "
            f"using the default {default!r}."
        )
        return default

    def _agrees_with(self, type_id: str, general: str) -> bool:
        """A free-text match counts unless it contradicts the general type (Text and Other
        say little: ``Text`` / ``Journal article`` is an article)."""
        if general.lower() in ("", "text", "other"):
            return True
        props = (self.vocabularies.entry("resourcetypes", type_id) or {}).get("props", {})
        return str(props.get("datacite_general") or "").lower() == general.lower()

    def _languages(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        for element in children(resource, "language"):
            value = text_of(element)
            found = self.language(value) if value else None
            if found is None:
                self.warn(f"language {value!r}: not in the languages vocabulary; dropped.")
            else:
                metadata.setdefault("languages", [])
                if {"id": found} not in metadata["languages"]:
                    metadata["languages"].append({"id": found})

    def _additional(
        self, field: str, element: etree._Element, text: str, kind: str
    ) -> dict[str, Any] | None:
        """An additional title or description: its type as the vocabulary's id (RDM needs
        one), its language, and RDM's minimum of 3 characters."""
        label = f"{field} {text[:40]!r}"
        type_id = self._datacite_term(f"{field}types", kind)
        if len(text) < 3 or type_id is None:
            reason = "shorter than 3 characters" if len(text) < 3 else f"no {field} type {kind}"
            self.warn(f"{label}: {reason}; dropped.")
            return None
        entry = {field: text, "type": {"id": type_id}}
        self._add_lang(entry, element, label)
        return entry

    def _add_lang(self, entry: dict[str, Any], element: etree._Element, label: str) -> None:
        code = language_attribute(element)
        if not code:
            return
        found = self.language(code)
        if found:
            entry["lang"] = {"id": found}
        else:
            self.warn(
                f"{label}: language {code!r} is not in the languages vocabulary; kept without it."
            )

    # -- rights and access
    def _rights(
        self, resource: etree._Element, metadata: dict[str, Any], embargo_until: str | None
    ) -> dict[str, Any]:
        access: dict[str, Any] = {"record": "public", "files": "public"}
        rights: list[dict[str, Any]] = []
        for element in children(resource, "rightsList", "rights"):
            text, uri = text_of(element), attribute(element, "rightsURI")
            identifier = attribute(element, "rightsIdentifier")
            term = eurepo_term(uri)
            if term is not None:
                if not self.file_access(term, access):
                    self.warn(f"rights {uri!r}: unknown eu-repo access term.")
                elif term == "embargoedAccess":
                    access.update(
                        self.embargo(
                            embargo_until, "rights embargoedAccess without a future Available date"
                        )
                    )
                continue
            if uri and text and comparable_url(uri) == comparable_url(COPYRIGHT_URI):
                if "copyright" not in metadata:
                    metadata["copyright"] = text
                    continue
            license_id = self._license(identifier, uri)
            if license_id:
                entry: dict[str, Any] = {"id": license_id}
            elif text or uri:
                if identifier:
                    self.warn(
                        f"rights {identifier!r}: not in the licenses vocabulary; kept as text."
                    )
                entry = {"title": {"en": text or uri}}
                if uri and is_web_url(uri):
                    entry["link"] = uri
            else:
                continue
            if entry not in rights:
                rights.append(entry)
        if rights:
            metadata["rights"] = rights
        return access

    def _license(self, identifier: str, uri: str) -> str | None:
        """By rightsIdentifier (SPDX ids, RDM's license ids in lower case), else by URI."""
        if identifier and self.vocabularies.exists("licenses", identifier.lower()):
            return identifier.lower()
        if uri and re.match(r"^https?://", uri):
            return self.license_by_url(uri)
        return None

    # -- identifiers
    def _scheme(self, value: str, datacite_type: str, related: bool = False) -> str | None:
        """The RDM scheme of a typed identifier: its type's scheme if the value is valid for
        it, else the scheme idutils detects (a DOI typed ``URL`` is still a DOI)."""
        schemes = (self._related_schemes if related else self._identifier_schemes) or {}
        typed = scheme_for_type(datacite_type, schemes)
        if typed and valid_for(schemes, typed, value):
            return typed
        return self.detected_scheme(value, related)

    def _identifiers(
        self, resource: etree._Element, data: dict[str, Any], record: OAIRecord
    ) -> None:
        identifiers: list[dict[str, str]] = []
        # The identifier is the resource's own DOI; an alternate DOI is another one.
        typed = [
            (element, attribute(element, "identifierType"), True)
            for element in children(resource, "identifier")
        ]
        typed += [
            (element, attribute(element, "alternateIdentifierType"), False)
            for element in children(resource, "alternateIdentifiers", "alternateIdentifier")
        ]
        for element, kind, own in typed:
            value = text_of(element)
            if not value or value == record.identifier:
                continue  # the OAI identifier is the tracking row's, not the record's
            scheme = self._scheme(value, kind)
            doi = (doi_of(value) or value) if scheme == "doi" else None
            if doi and own and self.doi_as_pid(doi, data):
                continue
            if doi and doi.lower() == pid_doi(data):
                continue  # the same DOI again
            if scheme is None:
                self.warn(f"identifier {value!r} ({kind or 'no type'}): scheme unknown; dropped.")
                continue
            add_identifier(identifiers, {"identifier": doi or value, "scheme": scheme})
        if identifiers:
            data["metadata"]["identifiers"] = identifiers

    def _related_identifiers(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        related: list[dict[str, Any]] = []
        for element in children(resource, "relatedIdentifiers", "relatedIdentifier"):
            value, kind = text_of(element), attribute(element, "relatedIdentifierType")
            relation = attribute(element, "relationType")
            label = f"relatedIdentifier {value!r}"
            scheme = self._scheme(value, kind, related=True) if value else None
            if scheme is None:
                self.warn(f"{label} ({kind or 'no type'}): scheme unknown; dropped.")
                continue
            relation_id = self._datacite_term("relationtypes", relation)
            if relation_id is None:
                if not self.vocabularies.exists("relationtypes", "other"):
                    self.warn(
                        f"{label}: no relation type {relation or 'none'} nor 'other'; dropped."
                    )
                    continue
                relation_id = "other"
                self.warn(f"{label}: no relation type {relation or 'none'}; kept as 'other'.")
            identifier = (doi_of(value) or value) if scheme == "doi" else value
            entry: dict[str, Any] = {
                "identifier": identifier,
                "scheme": scheme,
                "relation_type": {"id": relation_id},
            }
            general = attribute(element, "resourceTypeGeneral")
            type_id = self.resource_type_by_datacite(general) if general else None
            if type_id:
                entry["resource_type"] = {"id": type_id}
            elif general:
                self.warn(f"{label}: no resource type {general}; kept without it.")
            if entry not in related:
                related.append(entry)
        if related:
            metadata["related_identifiers"] = related

    # -- free text and controlled subjects
    def _subjects(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        subjects: list[dict[str, str]] = []
        for element in children(resource, "subjects", "subject"):
            text, scheme = text_of(element), attribute(element, "subjectScheme")
            value_uri = attribute(element, "valueURI")
            id_ = self._subject_id(text, scheme, value_uri)
            entry = {"id": id_} if id_ else ({"subject": text} if text else None)
            if entry is None:
                self.warn(
                    f"subject {value_uri!r}: no text and not in the subjects vocabulary; dropped."
                )
            elif entry not in subjects:
                subjects.append(entry)
        if subjects:
            metadata["subjects"] = subjects

    def _subject_id(self, text: str, scheme: str, value_uri: str) -> str | None:
        """A controlled subject the instance's ``subjects`` vocabulary has: by its URI,
        else by its scheme and term."""
        if value_uri and self.vocabularies.exists("subjects", value_uri):
            return value_uri
        if not (scheme and text):
            return None
        for id_ in self.vocabularies.by_field("subjects", "subject", text, lambda v: v == text):
            entry = self.vocabularies.entry("subjects", id_) or {}
            if str(entry.get("scheme", "")).lower() == scheme.lower():
                return id_
        return None

    def _descriptions(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        additional = []
        for element in children(resource, "descriptions", "description"):
            text = text_of(element, as_html=True)
            kind = attribute(element, "descriptionType") or "Other"
            if kind.lower() == "abstract" and "description" not in metadata and len(text) >= 3:
                metadata["description"] = text
                continue
            entry = self._additional("description", element, text, kind) if text else None
            if entry:
                additional.append(entry)
        if additional:
            metadata["additional_descriptions"] = additional

    def _plain_values(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        """publisher, version, sizes, formats: free text in RDM too."""
        publishers = [text_of(element) for element in children(resource, "publisher")]
        publishers = [publisher for publisher in publishers if publisher]
        if publishers:
            metadata["publisher"] = publishers[0]
            for other in publishers[1:]:
                self.warn(f"publisher {other!r}: RDM keeps one publisher; dropped.")
        version = first_text(resource, "version")
        if len(version) > VERSION_MAX_LENGTH:
            self.warn(f"version {version[:40]!r}...: longer than {VERSION_MAX_LENGTH}; dropped.")
        elif version:
            metadata["version"] = version
        for plural, singular in (("sizes", "size"), ("formats", "format")):
            values = [text_of(element) for element in children(resource, plural, singular)]
            values = list(dict.fromkeys(value for value in values if value))
            if values:
                metadata[plural] = values

    # -- funding and places
    def _funding(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        for element in children(resource, "fundingReferences", "fundingReference"):
            name = first_text(element, "funderName")
            found = children(element, "funderIdentifier")
            identifier = text_of(found[0]) if found else ""
            kind = attribute(found[0], "funderIdentifierType") if found else ""
            label = f"fundingReference {name or identifier!r}"
            funder_id = self._organisation_id("funders", identifier, kind) if identifier else None
            if identifier and funder_id is None:
                self.warn(
                    f"{label}: funder identifier {identifier!r} is not in the funders vocabulary; "
                    f"{'kept the name' if name else 'dropped'}."
                )
            if not (funder_id or name):
                continue
            entry: dict[str, Any] = {"funder": {"id": funder_id} if funder_id else {"name": name}}
            award = self._award(element, funder_id, label)
            if award:
                entry["award"] = award
            metadata.setdefault("funding", []).append(entry)

    def _award(
        self, element: etree._Element, funder_id: str | None, label: str
    ) -> dict[str, Any] | None:
        numbers = children(element, "awardNumber")
        number = text_of(numbers[0]) if numbers else ""
        uri = attribute(numbers[0], "awardURI") if numbers else ""
        title = first_text(element, "awardTitle")
        # invenio-vocabularies' award ids are "<funder id>::<number>".
        if funder_id and number and self.vocabularies.exists("awards", f"{funder_id}::{number}"):
            return {"id": f"{funder_id}::{number}"}
        if not (number or title):
            return None
        award: dict[str, Any] = {}
        if number:
            award["number"] = number
        if title:
            award["title"] = {"en": title}
        doi = doi_of(uri) if uri else None
        if doi or (uri and is_web_url(uri)):
            award["identifiers"] = [{"scheme": "doi" if doi else "url", "identifier": doi or uri}]
        elif uri:
            self.warn(f"{label}: awardURI {uri!r} is neither a DOI nor a URL; dropped.")
        return award

    def _funder_contributor(self, element: etree._Element, metadata: dict[str, Any]) -> None:
        name = first_text(element, "contributorName")
        if name:
            metadata.setdefault("funding", []).append({"funder": {"name": name}})

    def _locations(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        features = []
        for element in children(resource, "geoLocations", "geoLocation"):
            place = first_text(element, "geoLocationPlace")
            geometries = []
            for kind, reader in (
                ("geoLocationPoint", self._point),
                ("geoLocationBox", self._box),
                ("geoLocationPolygon", self._polygon),
            ):
                for found in children(element, kind):
                    geometry = reader(found)
                    if geometry is None:
                        self.warn(
                            f"{kind} {' '.join(' '.join(found.itertext()).split())!r}: "
                            "not valid coordinates; dropped."
                        )
                    else:
                        geometries.append(geometry)
            # RDM holds one geometry a feature: a second one makes a feature of its own.
            feature: dict[str, Any] = {"place": place} if place else {}
            for geometry in geometries:
                features.append({**feature, "geometry": geometry})
                feature = {}
            if feature:
                features.append(feature)
        if features:
            metadata["locations"] = {"features": features}

    @staticmethod
    def _position(element: etree._Element) -> list[float] | None:
        """[longitude, latitude] of a point (kernel 4 children, kernel 3 "lat lon" text)."""
        longitude, latitude = (
            first_text(element, "pointLongitude"),
            first_text(element, "pointLatitude"),
        )
        if not (longitude or latitude):
            parts = text_of(element).split()
            latitude, longitude = parts if len(parts) == 2 else ("", "")
        lon, lat = coordinate(longitude, 180), coordinate(latitude, 90)
        return [lon, lat] if lon is not None and lat is not None else None

    def _point(self, element: etree._Element) -> dict[str, Any] | None:
        position = self._position(element)
        return {"type": "Point", "coordinates": position} if position else None

    @staticmethod
    def _box(element: etree._Element) -> dict[str, Any] | None:
        names = (
            "westBoundLongitude",
            "eastBoundLongitude",
            "southBoundLatitude",
            "northBoundLatitude",
        )
        values = [first_text(element, name) for name in names]
        if not any(values):  # kernel 3: "south west north east"
            parts = text_of(element).split()
            if len(parts) == 4:
                south, west, north, east = parts
                values = [west, east, south, north]
        if len(values) != 4:
            return None
        west, east = (coordinate(value, 180) for value in values[:2])
        south, north = (coordinate(value, 90) for value in values[2:])
        if None in (west, east, south, north):
            return None
        ring = [[west, south], [east, south], [east, north], [west, north], [west, south]]
        return {"type": "Polygon", "coordinates": [ring]}

    def _polygon(self, element: etree._Element) -> dict[str, Any] | None:
        ring = [self._position(point) for point in children(element, "polygonPoint")]
        if not ring or None in ring:
            return None
        if ring[0] != ring[-1]:
            ring.append(ring[0])  # GeoJSON rings are closed
        return {"type": "Polygon", "coordinates": [ring]} if len(ring) >= 4 else None
