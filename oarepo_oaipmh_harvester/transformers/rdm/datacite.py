"""``oai_datacite`` / ``datacite`` -> InvenioRDM record data (the ``oai_datacite_rdm`` transformer).

Decision owned here: what each element of a DataCite metadata kernel 4 resource (4.0-4.5; the
kernel-3 forms where they are cheap to read) becomes in an RDM record, and which values are
given up with a warning. The resource comes bare (the ``datacite`` format) or in the
``oai_datacite`` envelope (``payload/resource``, as invenio-oaiserver serves RDM records).
Elements are matched by local name, so the kernel version's namespace does not matter.

DataCite is what RDM's own model follows, so most values have an exact home; the vocabulary
ids are still looked up before they are emitted (RDM refuses an unknown id with no draft at
all), and a value this instance cannot hold is a warning, never a failed record. Only the
fields RDM requires (title, creator) make a record fail, with a :class:`TransformError` naming
what is missing (a record without a creator fails unless ``missing_creator`` gives stand-ins,
:meth:`.base.RDMTransformer.stand_in_creators`: DataCite requires creators); a record without a usable Issued date or publicationYear gets its datestamp's
year unless the site says ``fail`` (:meth:`.base.RDMTransformer.stand_in_publication_date`).

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
Every element's rule shares one per-run vocabulary cache and one warning list
(:class:`.base.RDMTransformer`); the rules of a few elements have modules of their own
(:mod:`.datacite_names`, :mod:`.datacite_identifiers`, :mod:`.datacite_funding`,
:mod:`.datacite_places`), and :meth:`DataCiteRDMTransformer.transform` calls every rule in the
order of the README's mapping table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lxml import etree

from ..base import TransformError
from .base import RDMTransformer
from .datacite_funding import funding
from .datacite_identifiers import identifiers, related_identifiers
from .datacite_names import contributors, creators, stand_in_creators
from .datacite_places import locations
from .helpers import comparable_url, eurepo_term, is_web_url, level0_date
from .xml import (
    attribute,
    children,
    first_text,
    language_attribute,
    line_of,
    localname,
    text_of,
)

if TYPE_CHECKING:
    from ...protocol.records import OAIRecord

DATACITE_KERNEL = "http://datacite.org/schema/kernel-"

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


def datacite_resource(metadata: etree._Element | None, identifier: str) -> etree._Element:
    """The DataCite ``resource`` of a record: the element itself, or the one in the
    ``payload`` of an ``oai_datacite`` envelope (DSpace's XOAI puts it in the envelope
    itself, next to ``schemaVersion``)."""
    if metadata is None:
        raise TransformError(f"Record {identifier} has no metadata to transform.")
    resource = metadata
    if localname(metadata) == "oai_datacite":
        found = [child for child in children(metadata, "payload") for child in child]
        found += children(metadata, "resource")
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


# -- the transformer --------------------------------------------------------------------------
class DataCiteRDMTransformer(RDMTransformer):
    """A DataCite kernel 4 resource as the data of a metadata-only InvenioRDM record."""

    name = "oai_datacite_rdm"

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        """The record's data; TransformError for a missing title or creator (or date, when
        ``missing_date`` is ``fail``)."""
        data, metadata = self.new_record()
        resource = datacite_resource(record.metadata, record.identifier)

        self._titles(resource, metadata, record)
        creators(self, resource, metadata, record)
        contributors(self, resource, metadata)
        stand_in_creators(self, resource, metadata, record)
        embargo_until = self._dates(resource, metadata, record)
        metadata["resource_type"] = {"id": self._resource_type(resource)}
        self._languages(resource, metadata)
        data["access"] = self._rights(resource, metadata, embargo_until)
        identifiers(self, resource, data, record)
        related_identifiers(self, resource, metadata)
        self._subjects(resource, metadata)
        self._descriptions(resource, metadata)
        self._plain_values(resource, metadata)
        funding(self, resource, metadata)
        locations(resource, metadata, self.warn)
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
        if main is None or len(line_of(main)) < 3:
            found = repr(line_of(main)) if main is not None else "none"
            raise TransformError(
                f"Record {record.identifier} has no title of at least 3 characters "
                f"(RDM needs one); found {found}."
            )
        metadata["title"] = line_of(main)
        additional = []
        for title in titles:
            if title is main:
                continue
            kind = attribute(title, "titleType") or "AlternativeTitle"
            entry = self._additional("title", title, line_of(title), kind)
            if entry:
                additional.append(entry)
        if additional:
            metadata["additional_titles"] = additional

    def _dates(
        self, resource: etree._Element, metadata: dict[str, Any], record: OAIRecord
    ) -> str | None:
        """Publication date and other dates; returns the Available date (an embargo's end)."""
        available = None
        dates = []
        unusable: list[str] = []  # Issued dates and a publicationYear RDM cannot take
        for element in children(resource, "dates", "date"):
            value, kind = text_of(element), attribute(element, "dateType") or "Other"
            parsed = level0_date(value)
            if parsed is None:
                self.warn(f"date {value!r} ({kind}): not an EDTF level 0 date; dropped.")
                if kind.lower() == "issued":
                    unusable.append(value)
                continue
            if kind.lower() == "issued" and "publication_date" not in metadata:
                metadata["publication_date"] = parsed
                continue
            if kind.lower() == "available" and available is None:
                available = parsed
            entry: dict[str, Any] = {"date": parsed}
            type_id = self.datacite_term("datetypes", kind)
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
                metadata["publication_date"] = self.stand_in_publication_date(
                    record,
                    "Issued date or publicationYear",
                    [*unusable, *([year] if year else [])],
                    f"Record {record.identifier} has no publication date: no Issued date in "
                    f"EDTF form and no publicationYear (RDM needs one); found {year!r}.",
                )
        if dates:
            metadata["dates"] = dates
        return available

    # -- vocabularies
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
        type_id = self.datacite_term(f"{field}types", kind)
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
        publishers = [line_of(element) for element in children(resource, "publisher")]
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
