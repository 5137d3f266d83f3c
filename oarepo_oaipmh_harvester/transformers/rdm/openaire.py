"""``oai_openaire`` -> InvenioRDM record data (the ``oai_openaire_rdm`` transformer).

Decision owned here: what each element of an OpenAIRE Guidelines for Literature Repositories v4
``oaire:resource`` (namespace ``http://namespace.openaire.eu/schema/oaire/``; what DSpace 7/8,
OJS's OpenAIRE plugin and OpenEdition serve as ``oai_openaire``) becomes in an RDM record, and
which values are given up with a warning. docs/openaire.rst has the table element by element.

OpenAIRE v4 takes most of its elements from DataCite kernel 4 (``datacite:titles``,
``creators``, ``contributors``, ``dates``, ``identifier``, ``alternateIdentifiers``,
``relatedIdentifiers``, ``subjects``, ``sizes``, ``geoLocations``) and its funding references
have DataCite's shape: those are read by the DataCite transformer's rules, which match elements
by local name. What is OpenAIRE's own has modules here: the COAR tables
(:mod:`.openaire_tables`), access rights, licences and file locations (:mod:`.openaire_access`),
funding with OpenAIRE project ids (:mod:`.openaire_funding`) and the citation elements
(:mod:`.openaire_citation`). Only a missing title fails a record; a record without a creator
gets stand-ins (``missing_creator``, ``contributors`` by default for this transformer) and one
without a usable Issued date its datestamp's year (``missing_date``), each with a warning.

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lxml import etree

from ..base import TransformError
from .datacite import VERSION_MAX_LENGTH, DataCiteRDMTransformer
from .datacite_identifiers import identifiers, related_identifiers
from .datacite_names import contributors, creators
from .datacite_places import locations
from .openaire_access import access_and_rights, file_locations
from .openaire_citation import CITATION_ELEMENTS, citation, site_custom_fields
from .openaire_funding import funding
from .openaire_repair import repaired
from .openaire_tables import (
    COAR_RESOURCE_TYPE,
    COAR_RESOURCE_TYPES,
    COAR_VERSION,
    COAR_VERSIONS,
    GENERAL_RESOURCE_TYPES,
    coar_id,
)
from .xml import attribute, children, line_of, localname, text_of

if TYPE_CHECKING:
    from ...protocol.records import OAIRecord

OPENAIRE_NS = "http://namespace.openaire.eu/schema/oaire/"

MAPPED = frozenset(
    {
        "titles",
        "creators",
        "contributors",
        "fundingReferences",
        "alternateIdentifiers",
        "relatedIdentifiers",
        "dates",
        "language",
        "publisher",
        "resourceType",
        "description",
        "format",
        "identifier",
        "rights",
        "rightsList",
        "subjects",
        "licenseCondition",
        "sizes",
        "geoLocations",
        "version",
        "file",
        *CITATION_ELEMENTS,
    }
)
"""Top-level elements with a rule here; any other one with a value is a warning."""


def openaire_resource(metadata: etree._Element | None, identifier: str) -> etree._Element:
    """The ``oaire:resource`` of a record (or a ``resource`` without a namespace, as a
    careless exporter writes it); TransformError for anything else."""
    if metadata is None:
        raise TransformError(f"Record {identifier} has no metadata to transform.")
    namespace = etree.QName(metadata).namespace
    if localname(metadata) != "resource" or namespace not in (OPENAIRE_NS, None):
        raise TransformError(
            f"Record {identifier} has no OpenAIRE oaire:resource in its metadata "
            f"(root element {metadata.tag!r})."
        )
    return metadata


class OpenAIRERDMTransformer(DataCiteRDMTransformer):
    """An OpenAIRE v4 literature record as the data of a metadata-only InvenioRDM record.

    A DataCite transformer by descent: the elements OpenAIRE borrows from DataCite kernel 4
    are read by the same rules (titles, dates, languages, subjects, additional titles and
    descriptions), so the two formats give the same RDM values for the same metadata.
    """

    name = "oai_openaire_rdm"

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        """The record's data; TransformError for a missing title (or creator or date, when
        ``missing_creator`` or ``missing_date`` is ``fail``)."""
        data, metadata = self.new_record()
        resource = repaired(openaire_resource(record.metadata, record.identifier), self.warn)

        self._titles(resource, metadata, record)
        creators(self, resource, metadata, record)
        contributors(self, resource, metadata)
        self._stand_ins(resource, metadata, record)
        embargo_until = self._dates(resource, metadata, record)
        metadata["resource_type"] = {"id": self._coar_resource_type(resource)}
        self._languages(resource, metadata)
        data["access"] = access_and_rights(self, resource, metadata, embargo_until)
        identifiers(self, resource, data, record)
        related_identifiers(self, resource, metadata)
        self._subjects_with_schemes(resource, metadata)
        self._abstracts(resource, metadata)
        self._free_text(resource, metadata)
        funding(self, resource, metadata)
        locations(resource, metadata, self.warn)
        file_locations(self, resource, metadata, data["access"], embargo_until)
        citation(self, resource, data, site_custom_fields())
        for element in resource:
            if isinstance(element.tag, str) and localname(element) not in MAPPED:
                self._unmapped(element)
        return data

    def _stand_ins(
        self, resource: etree._Element, metadata: dict[str, Any], record: OAIRecord
    ) -> None:
        if metadata.get("creators"):
            return
        metadata["creators"] = self.stand_in_creators(
            record,
            "datacite:creator with a name",
            contributors=metadata.get("contributors", ()),
            holders=[line_of(element) for element in children(resource, "publisher")],
            error=(
                f"Record {record.identifier} has no datacite:creator with a name "
                "(RDM needs at least one)."
            ),
        )

    def _coar_resource_type(self, resource: etree._Element) -> str:
        """By the COAR URI through our table, else by its term, else by
        ``resourceTypeGeneral``, else the default; a warning for each step down."""
        found = children(resource, "resourceType")
        element = found[0] if found else None
        uri = attribute(element, "uri") if element is not None else ""
        term = line_of(element)
        general = attribute(element, "resourceTypeGeneral") if element is not None else ""
        coar = coar_id(uri, COAR_RESOURCE_TYPE) if uri else None
        label, candidates = COAR_RESOURCE_TYPES.get(coar or "", ("", ()))
        for candidate in candidates:
            if self.vocabularies.exists("resourcetypes", candidate):
                return candidate
        if candidates:
            reason = f"COAR {label!r} maps to {', '.join(candidates)}, which this site lacks"
        elif uri:
            reason = "not a COAR resource type of the table"
        else:
            reason = "no COAR URI"
        shown = repr(uri or term or "missing")
        keyword = self.resource_type_by_keyword(term) if term else None
        fallbacks = [(keyword, f"its term {term!r}")] if keyword else []
        fallbacks += [
            (candidate, f"resourceTypeGeneral {general!r}")
            for candidate in GENERAL_RESOURCE_TYPES.get(general.lower(), ())
            if self.vocabularies.exists("resourcetypes", candidate)
        ]
        for type_id, source in fallbacks:
            self.warn(f"resourceType {shown}: {reason}; using {type_id!r} by {source}.")
            return type_id
        default = self.default_resource_type
        self.warn(f"resourceType {shown}: {reason}; using the default {default!r}.")
        return default

    def _subjects_with_schemes(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        """As DataCite's subjects; a scheme RDM's vocabulary lacks is said, not dropped
        silently (a free-text subject has no scheme in RDM)."""
        self._subjects(resource, metadata)
        for element in children(resource, "subjects", "subject"):
            text, scheme = text_of(element), attribute(element, "subjectScheme")
            value_uri = attribute(element, "valueURI")
            if text and (scheme or value_uri) and not self._subject_id(text, scheme, value_uri):
                given = ", ".join(filter(None, (scheme, value_uri)))
                self.warn(
                    f"subject {text!r} ({given}): not in the subjects vocabulary; "
                    "kept as free text without its scheme."
                )

    def _abstracts(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        """``dc:description``: the first as the description, the others (abstracts in other
        languages, as OpenEdition and OJS write them) as additional abstracts."""
        additional = []
        for element in children(resource, "description"):
            text = text_of(element, as_html=True)
            if not text:
                continue
            if "description" not in metadata and len(text) >= 3:
                metadata["description"] = text
                continue
            entry = self._additional("description", element, text, "Abstract")
            if entry:
                additional.append(entry)
        if additional:
            metadata["additional_descriptions"] = additional

    def _free_text(self, resource: etree._Element, metadata: dict[str, Any]) -> None:
        """publisher, version (its text, else the COAR version's abbreviation), sizes as
        for DataCite; ``dc:format`` values as formats."""
        self._plain_values(resource, metadata)
        found = children(resource, "version")
        uri = attribute(found[0], "uri") if found else ""
        abbreviation = COAR_VERSIONS.get(coar_id(uri, COAR_VERSION) or "", "")
        if found and "version" not in metadata and len(text_of(found[0])) <= VERSION_MAX_LENGTH:
            if abbreviation:
                metadata["version"] = abbreviation
            elif uri:
                self.warn(f"version {uri!r}: not a COAR version; dropped.")
        formats = [text_of(element) for element in children(resource, "format")]
        formats = list(dict.fromkeys(value for value in formats if value))
        if formats:
            metadata["formats"] = formats

    def _unmapped(self, element: etree._Element) -> None:
        name = localname(element)
        value = " ".join(text_of(element).split())
        has_children = any(isinstance(child.tag, str) for child in element)
        if value or has_children:
            shown = f" {value[:60]!r}" if value and not has_children else ""
            self.warn(f"<{name}>{shown}: no RDM field is mapped; dropped.")
