"""OpenAIRE v4 access rights, licence conditions and file locations -> RDM ``access``,
``rights`` and ``related_identifiers``.

Decision owned here: ``datacite:rights`` with a COAR access right URI (or, as older
repositories write, an eu-repo term) sets ``access.files`` - open ``public``; embargoed
``restricted`` with an embargo until the ``Available`` date if it is still to come; restricted
and metadata-only ``restricted`` - and the record itself stays public (its metadata is served
over OAI-PMH). ``oaire:licenseCondition`` is the ``licenses`` entry of its URL, else a free-text
right with its link. ``oaire:file`` is kept for the later files issue as a related identifier
of scheme ``url``, relation ``haspart`` and the resource type of its ``objectType``; its
``mimeType`` joins ``formats``. A file's own access right has no place (RDM's access is per
record) and is a warning when it differs from the record's.

Each rule is a function of the :class:`~.base.RDMTransformer` of the run, called by
:class:`~.openaire.OpenAIRERDMTransformer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .helpers import eurepo_term, is_web_url
from .openaire_tables import (
    COAR_ACCESS_RIGHT,
    COAR_ACCESS_RIGHTS,
    EMBARGOED,
    FILE_OBJECT_TYPES,
    coar_id,
)
from .xml import attribute, children, line_of, text_of

if TYPE_CHECKING:
    from lxml import etree

    from .base import RDMTransformer

FILE_RELATION = "haspart"


def access_and_rights(
    transformer: RDMTransformer,
    resource: etree._Element,
    metadata: dict[str, Any],
    embargo_until: str | None,
) -> dict[str, Any]:
    """The record's ``access``; licences and other rights into ``metadata["rights"]``."""
    access: dict[str, Any] = {"record": "public", "files": "public"}
    rights: list[dict[str, Any]] = []
    found_right: str | None = None
    for element in children(resource, "rights") + children(resource, "rightsList", "rights"):
        uri, text = attribute(element, "rightsURI"), line_of(element)
        coar = coar_id(uri, COAR_ACCESS_RIGHT)
        term = eurepo_term(uri)
        if coar is None and term is None:
            _right(transformer, rights, uri, text, f"rights {text or uri!r}")
            continue
        if found_right is not None:
            if uri != found_right:
                transformer.warn(f"rights {uri!r}: a second access right; kept {found_right!r}.")
            continue
        found_right = uri
        if coar in COAR_ACCESS_RIGHTS:
            access["files"] = COAR_ACCESS_RIGHTS[coar][1]
        elif term is None or not transformer.file_access(term, access):
            transformer.warn(f"rights {uri!r}: unknown access right; files left public.")
            continue
        if coar == EMBARGOED or term == "embargoedAccess":
            access.update(
                transformer.embargo(
                    embargo_until, "rights embargoed access without a future Available date"
                )
            )
    for element in children(resource, "licenseCondition"):
        uri, text = attribute(element, "uri"), line_of(element)
        label = f"licenseCondition {text or uri!r}"
        _right(transformer, rights, uri, text, label)
        start = attribute(element, "startDate")
        if start:
            transformer.warn(f"{label}: startDate {start!r} has no RDM field; dropped.")
    if rights:
        metadata["rights"] = rights
    return access


def _right(
    transformer: RDMTransformer, rights: list[dict[str, Any]], uri: str, text: str, label: str
) -> None:
    license_id = transformer.license_by_url(uri) if uri and is_web_url(uri) else None
    if license_id:
        entry: dict[str, Any] = {"id": license_id}
    elif text or uri:
        entry = {"title": {"en": text or uri}}
        if uri and is_web_url(uri):
            entry["link"] = uri
            if text:
                transformer.warn(
                    f"{label}: {uri!r} is not in the licenses vocabulary; kept as text."
                )
        elif uri and text:
            transformer.warn(f"{label}: {uri!r} is no link RDM takes; kept the text only.")
    else:
        return
    if entry not in rights:
        rights.append(entry)


def file_locations(
    transformer: RDMTransformer,
    resource: etree._Element,
    metadata: dict[str, Any],
    access: dict[str, Any],
) -> None:
    related: list[dict[str, Any]] = []
    relation = FILE_RELATION
    if not transformer.vocabularies.exists("relationtypes", relation):
        relation = "other"
    formats: list[str] = list(metadata.get("formats", ()))
    for element in children(resource, "file"):
        url = text_of(element)
        label = f"file {url!r}"
        if not (url and is_web_url(url)):
            transformer.warn(f"{label}: not a URL; dropped.")
            continue
        if not transformer.vocabularies.exists("relationtypes", relation):
            transformer.warn(f"{label}: no relation type {FILE_RELATION} nor 'other'; dropped.")
            continue
        entry: dict[str, Any] = {
            "identifier": url,
            "scheme": "url",
            "relation_type": {"id": relation},
        }
        kind = attribute(element, "objectType")
        type_id = next(
            (
                candidate
                for candidate in FILE_OBJECT_TYPES.get(kind.lower(), ())
                if transformer.vocabularies.exists("resourcetypes", candidate)
            ),
            None,
        )
        if type_id:
            entry["resource_type"] = {"id": type_id}
        elif kind:
            transformer.warn(f"{label}: objectType {kind!r} has no resource type; kept without.")
        related.append(entry)
        mime = attribute(element, "mimeType")
        if mime and mime not in formats:
            formats.append(mime)
        right = coar_id(attribute(element, "accessRightsURI"), COAR_ACCESS_RIGHT)
        files = COAR_ACCESS_RIGHTS.get(right or "", ("", ""))[1]
        if right and files != access["files"]:
            transformer.warn(
                f"{label}: its access right {right} differs from the record's "
                f"({access['files']} files); RDM keeps one per record."
            )
    if related:
        metadata.setdefault("related_identifiers", []).extend(related)
    if formats:
        metadata["formats"] = formats
