"""DataCite identifiers -> RDM ``pids.doi``, ``identifiers`` and ``related_identifiers``.

Decision owned here: the resource's own DOI becomes ``pids.doi`` when the instance takes
external DOIs (an alternate DOI never does); an identifier's scheme is its DataCite type's when
the value is valid for it, else the one idutils detects; the OAI identifier and the record's
DOI written again are skipped; a related identifier's relation type and resource type are
looked up in the instance's vocabularies (an unknown relation type is kept as ``other``).

Each rule is a function of the :class:`~.base.RDMTransformer` of the run, called by
:class:`~.datacite.DataCiteRDMTransformer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .helpers import add_identifier, doi_of, pid_doi
from .xml import attribute, children, text_of

if TYPE_CHECKING:
    from lxml import etree

    from ...protocol.records import OAIRecord
    from .base import RDMTransformer


def identifiers(
    transformer: RDMTransformer,
    resource: etree._Element,
    data: dict[str, Any],
    record: OAIRecord,
) -> None:
    found: list[dict[str, str]] = []
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
        scheme = transformer.typed_scheme(value, kind)
        doi = (doi_of(value) or value) if scheme == "doi" else None
        if doi and own and transformer.doi_as_pid(doi, data):
            continue
        if doi and doi.lower() == pid_doi(data):
            continue  # the same DOI again
        if scheme is None:
            transformer.warn(
                f"identifier {value!r} ({kind or 'no type'}): scheme unknown; dropped."
            )
            continue
        add_identifier(found, {"identifier": doi or value, "scheme": scheme})
    if found:
        data["metadata"]["identifiers"] = found


def related_identifiers(
    transformer: RDMTransformer, resource: etree._Element, metadata: dict[str, Any]
) -> None:
    related: list[dict[str, Any]] = []
    for element in children(resource, "relatedIdentifiers", "relatedIdentifier"):
        value, kind = text_of(element), attribute(element, "relatedIdentifierType")
        relation = attribute(element, "relationType")
        label = f"relatedIdentifier {value!r}"
        scheme = transformer.typed_scheme(value, kind, related=True) if value else None
        if scheme is None:
            transformer.warn(f"{label} ({kind or 'no type'}): scheme unknown; dropped.")
            continue
        relation_id = transformer.datacite_term("relationtypes", relation)
        if relation_id is None:
            if not transformer.vocabularies.exists("relationtypes", "other"):
                transformer.warn(
                    f"{label}: no relation type {relation or 'none'} nor 'other'; dropped."
                )
                continue
            relation_id = "other"
            transformer.warn(f"{label}: no relation type {relation or 'none'}; kept as 'other'.")
        identifier = (doi_of(value) or value) if scheme == "doi" else value
        entry: dict[str, Any] = {
            "identifier": identifier,
            "scheme": scheme,
            "relation_type": {"id": relation_id},
        }
        general = attribute(element, "resourceTypeGeneral")
        type_id = transformer.resource_type_by_datacite(general) if general else None
        if type_id:
            entry["resource_type"] = {"id": type_id}
        elif general:
            transformer.warn(f"{label}: no resource type {general}; kept without it.")
        if entry not in related:
            related.append(entry)
    if related:
        metadata["related_identifiers"] = related
