"""LIDO identifiers, rights and digital resources -> RDM ``identifiers``, ``pids.doi``,
``rights``, ``copyright``, the rights holder and ``related_identifiers``.

Decision owned here: the museum's own identifiers (``lidoRecID``, ``recordID``, the
inventory number ``workID``) are kept under the scheme idutils detects, else under RDM's
``other`` scheme where the instance has it; ``recordInfoLink`` is a URL; an
``objectPublishedID`` DOI is ``pids.doi`` where the instance takes external DOIs. A rights
statement names an RDM license by its URL (``conceptID`` or a URL in the term) or by its
Creative Commons / public domain name, else it is free-text rights with its link; the rights
of the metadata record (``recordRights``) have no field of their own in RDM and are kept among
the record's rights with a warning. Digital resources (``linkResource``) are related
identifiers (URL scheme) - never silently dropped -; their own rights have no home in RDM.

Each rule is a function of the :class:`~.lido.RDMTransformer` of the run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .helpers import add_identifier, doi_of, is_web_url, pid_doi, type_keyword
from .lido_read import RESOURCE_TYPES, license_id_of_text, preferred_text, terms
from .xml import children, text_of

if TYPE_CHECKING:
    from lxml import etree

    from ...protocol.records import OAIRecord
    from .base import RDMTransformer

RESOURCE_RELATIONS = ("isdocumentedby", "isdescribedby", "other")
"""Relation types tried for a digital resource of the object, in order."""

URL = re.compile(r"https?://\S+")
HANDLE = re.compile(r"^(hdl:|https?://hdl\.handle\.net/)")


# -- identifiers ------------------------------------------------------------------------------
def identifiers(
    transformer: RDMTransformer,
    lido: etree._Element,
    data: dict[str, Any],
    record: OAIRecord,
) -> None:
    found: list[dict[str, str]] = []
    administrative = children(lido, "administrativeMetadata")
    repository = children(lido, "descriptiveMetadata", "objectIdentificationWrap")
    values = [("objectPublishedID", e) for e in children(lido, "objectPublishedID")]
    values += [("lidoRecID", e) for e in children(lido, "lidoRecID")]
    values += [
        ("workID", e)
        for w in repository
        for e in children(w, "repositoryWrap", "repositorySet", "workID")
    ]
    values += [
        ("recordID", e) for a in administrative for e in children(a, "recordWrap", "recordID")
    ]
    links = [
        e
        for a in administrative
        for e in children(a, "recordWrap", "recordInfoSet", "recordInfoLink")
    ]
    for name, element in values:
        value = text_of(element)
        if not value or value == record.identifier:
            continue
        doi = doi_of(value)
        if doi and name == "objectPublishedID" and transformer.doi_as_pid(doi, data):
            continue
        if doi and doi.lower() == pid_doi(data):
            continue
        scheme = "doi" if doi else transformer.detected_scheme(value)
        if scheme == "handle" and not HANDLE.match(value):
            scheme = None  # idutils takes any "prefix/suffix" (DE-MUS-1/42) for a handle
        if scheme is None and "other" in (transformer._identifier_schemes or {}):
            scheme = "other"
        if scheme is None:
            transformer.warn(f"{name} {value!r}: scheme unknown; dropped.")
            continue
        add_identifier(found, {"identifier": doi or value, "scheme": scheme})
    for element in links:
        value = text_of(element)
        if value and is_web_url(value):
            add_identifier(found, {"identifier": value, "scheme": "url"})
        elif value:
            transformer.warn(f"recordInfoLink {value!r}: not a URL; dropped.")
    if found:
        data["metadata"]["identifiers"] = found


# -- rights -----------------------------------------------------------------------------------
def rights(transformer: RDMTransformer, lido: etree._Element, metadata: dict[str, Any]) -> None:
    found: list[dict[str, Any]] = []
    copyright_lines: list[str] = []
    holders: list[str] = []
    for admin in children(lido, "administrativeMetadata"):
        for element in children(admin, "rightsWorkWrap", "rightsWorkSet"):
            _rights_set(transformer, element, found, "rightsWorkSet", copyright_lines, holders)
        for element in children(admin, "recordWrap", "recordRights"):
            count = len(found)
            _rights_set(transformer, element, found, "recordRights", [], [])
            for entry in found[count:]:
                shown = entry.get("id") or entry["title"]["en"]
                transformer.warn(
                    f"recordRights {shown!r}: RDM has no rights of the metadata record; "
                    f"kept among the record's rights."
                )
    if found:
        metadata["rights"] = found
    _holders(transformer, holders, copyright_lines, metadata)
    if copyright_lines:
        metadata["copyright"] = "; ".join(dict.fromkeys(copyright_lines))


def _rights_set(
    transformer: RDMTransformer,
    element: etree._Element,
    found: list[dict[str, Any]],
    label: str,
    copyright_lines: list[str],
    holders: list[str],
) -> None:
    texts = terms(element, "rightsType")
    urls = [text_of(e) for e in children(element, "rightsType", "conceptID") if text_of(e)]
    urls += [match.group(0) for text in texts for match in [URL.search(text)] if match]
    license_id = next((i for url in urls if (i := transformer.license_by_url(url))), None)
    if license_id is None:
        for text in texts:
            candidate = license_id_of_text(text)
            if candidate and transformer.vocabularies.exists("licenses", candidate):
                license_id = candidate
                break
            if candidate:
                transformer.warn(
                    f"{label} {text!r}: license {candidate!r} is not in the licenses vocabulary."
                )
    if license_id:
        entry: dict[str, Any] = {"id": license_id}
    elif texts or urls:
        entry = {
            "title": {
                "en": next((t for t in texts if not URL.fullmatch(t)), urls[0] if urls else "")
            }
        }
        link = next((url for url in urls if is_web_url(url)), None)
        if link:
            entry["link"] = link
    else:
        entry = {}
    if entry and entry not in found:
        found.append(entry)
    copyright_lines += [text_of(e) for e in children(element, "creditLine") if text_of(e)]
    for holder in children(element, "rightsHolder"):
        name = preferred_text(holder, "legalBodyName", "appellationValue")
        if name:
            holders.append(name)


def _holders(
    transformer: RDMTransformer,
    holders: list[str],
    copyright_lines: list[str],
    metadata: dict[str, Any],
) -> None:
    """A rights holder is a contributor with RDM's ``rightsholder`` role, else it goes into
    the copyright statement."""
    has_role = transformer.vocabularies.exists("contributorsroles", "rightsholder")
    for name in dict.fromkeys(holders):
        if has_role:
            entry = {"person_or_org": {"type": "organizational", "name": name}}
            metadata.setdefault("contributors", []).append(
                {**entry, "role": {"id": "rightsholder"}}
            )
        elif not any(name in line for line in copyright_lines):
            copyright_lines.append(f"© {name}")


# -- digital resources ------------------------------------------------------------------------
def resources(transformer: RDMTransformer, lido: etree._Element, metadata: dict[str, Any]) -> None:
    related: list[dict[str, Any]] = metadata.get("related_identifiers", [])
    relation = next(
        (r for r in RESOURCE_RELATIONS if transformer.vocabularies.exists("relationtypes", r)), None
    )
    for admin in children(lido, "administrativeMetadata"):
        for resource in children(admin, "resourceWrap", "resourceSet"):
            links = [
                text_of(e)
                for e in children(resource, "resourceRepresentation", "linkResource")
                if text_of(e)
            ]
            type_id = _resource_type(transformer, terms(resource, "resourceType"))
            for link in dict.fromkeys(links):
                if relation is None or not is_web_url(link):
                    reason = "not a URL" if relation else f"no relation type {RESOURCE_RELATIONS}"
                    transformer.warn(f"resource {link!r}: {reason}; dropped.")
                    continue
                entry: dict[str, Any] = {
                    "identifier": link,
                    "scheme": "url",
                    "relation_type": {"id": relation},
                }
                if type_id:
                    entry["resource_type"] = {"id": type_id}
                if entry not in related:
                    related.append(entry)
            shown = links[0] if links else preferred_text(resource, "resourceID")
            if not links:
                transformer.warn(f"resourceSet {shown!r}: no linkResource; dropped.")
            for rights_resource in children(resource, "rightsResource"):
                statement = terms(rights_resource, "rightsType") + [
                    text_of(e) for e in children(rights_resource, "creditLine") if text_of(e)
                ]
                transformer.warn(
                    f"resource {shown!r}: rights {'; '.join(statement)!r} not kept (RDM's related "
                    f"identifiers have no rights)."
                )
    if related:
        metadata["related_identifiers"] = related


def _resource_type(transformer: RDMTransformer, found: list[str]) -> str | None:
    for term in found:
        for candidate in RESOURCE_TYPES.get(type_keyword(term), ()):
            if transformer.vocabularies.exists("resourcetypes", candidate):
                return candidate
        keyword = transformer.resource_type_by_keyword(term)
        if keyword:
            return keyword
    return None
