"""OpenAIRE v4 access rights, licence conditions and file locations -> RDM ``access``,
``rights`` and ``related_identifiers``.

Decision owned here: the access rights of ``datacite:rights`` (a COAR access right URI, an
eu-repo term as older repositories write, or either as the element's text) and of each
``oaire:file`` set ``access.files``, the **most restrictive** of them winning (RDM has one files
access per record: a restricted file must never be published open) - open ``public``;
embargoed ``restricted`` with an embargo until the ``Available`` date if it is still to come;
restricted and metadata-only ``restricted`` - and the record itself stays public (its metadata
is served over OAI-PMH). ``oaire:licenseCondition`` is the ``licenses`` entry of its URL, else a free-text
right with its link. ``oaire:file`` is a file of the record (``last_files``, its access by its
own ``accessRightsURI``, else by the record's) and a related identifier of scheme ``url``,
relation ``haspart`` and the resource type of its ``objectType``; its ``mimeType`` joins
``formats``. A file's access right that differs from the record's is a
warning (RDM's access is per record), and a more restrictive one restricts the record's files.

Each rule is a function of the :class:`~.base.RDMTransformer` of the run, called by
:class:`~.openaire.OpenAIRERDMTransformer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..files import FileAccess, checked_file_reference
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


# COAR access right ids from the least to the most restrictive.
RESTRICTIVENESS = ("c_abf2", EMBARGOED, "c_16ec", "c_14cb")
EUREPO_COAR = {
    "openAccess": "c_abf2",
    "embargoedAccess": EMBARGOED,
    "restrictedAccess": "c_16ec",
    "closedAccess": "c_14cb",
}
LABEL_COAR = {label: coar for coar, (label, _) in COAR_ACCESS_RIGHTS.items()}
FILE_ACCESS = {
    "c_abf2": FileAccess.OPEN,
    EMBARGOED: FileAccess.EMBARGOED,
    "c_16ec": FileAccess.RESTRICTED,
    "c_14cb": FileAccess.METADATA_ONLY,
}
"""COAR access right id -> the access of a file (:class:`~..files.FileReference`)."""


def access_right_of(uri: str, text: str = "") -> str | None:
    """The COAR access right id a URI or a text names (COAR URI, eu-repo term, COAR label)."""
    coar = coar_id(uri, COAR_ACCESS_RIGHT) or coar_id(text, COAR_ACCESS_RIGHT)
    if coar in COAR_ACCESS_RIGHTS:
        return coar
    term = eurepo_term(uri) or eurepo_term(text)
    if term in EUREPO_COAR:
        return EUREPO_COAR[term]
    return LABEL_COAR.get(text.strip().lower())


def record_access_right(resource: etree._Element) -> str | None:
    """The strictest COAR access right the record's ``datacite:rights`` name (None if none;
    an unknown access right counts as restricted)."""
    found = []
    for element in children(resource, "rights") + children(resource, "rightsList", "rights"):
        uri, text = attribute(element, "rightsURI"), line_of(element)
        coar = access_right_of(uri, text)
        if coar is None and (coar_id(uri, COAR_ACCESS_RIGHT) or eurepo_term(uri)):
            coar = "c_16ec"
        if coar is not None:
            found.append(coar)
    return max(found, key=RESTRICTIVENESS.index) if found else None


def access_and_rights(
    transformer: RDMTransformer,
    resource: etree._Element,
    metadata: dict[str, Any],
    embargo_until: str | None,
) -> dict[str, Any]:
    """The record's ``access``; licences and other rights into ``metadata["rights"]``."""
    rights: list[dict[str, Any]] = []
    found: list[str] = []
    for element in children(resource, "rights") + children(resource, "rightsList", "rights"):
        uri, text = attribute(element, "rightsURI"), line_of(element)
        coar = access_right_of(uri, text)
        if coar is not None:
            found.append(coar)
        elif coar_id(uri, COAR_ACCESS_RIGHT) or eurepo_term(uri):
            transformer.warn(f"rights {uri!r}: unknown access right; it restricts the files.")
            found.append("c_16ec")
        else:
            _right(transformer, rights, uri, text, f"rights {text or uri!r}")
    if len(set(found)) > 1:
        transformer.warn(
            f"rights: access rights {', '.join(dict.fromkeys(found))}; the most restrictive "
            f"holds for the files."
        )
    for element in children(resource, "file"):
        right = access_right_of(attribute(element, "accessRightsURI"))
        if right is not None:
            found.append(right)
    access: dict[str, Any] = {"record": "public", "files": "public"}
    if found:
        strictest = max(found, key=RESTRICTIVENESS.index)
        access["files"] = COAR_ACCESS_RIGHTS[strictest][1]
        if strictest == EMBARGOED:
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
    embargo_until: str | None = None,
) -> None:
    """Each ``oaire:file``: a related identifier, its MIME type among ``formats``, and a
    :class:`~..files.FileReference` in the transformer's ``last_files`` whose access is the
    file's own ``accessRightsURI``, else the record's strictest access right."""
    related: list[dict[str, Any]] = []
    relation = FILE_RELATION
    if not transformer.vocabularies.exists("relationtypes", relation):
        relation = "other"
    formats: list[str] = list(metadata.get("formats", ()))
    record_right = record_access_right(resource)
    taken = {f.name for f in transformer.last_files}
    for element in children(resource, "file"):
        url = text_of(element)
        label = f"file {url!r}"
        if not (url and is_web_url(url)):
            transformer.warn(f"{label}: not a URL; dropped.")
            continue
        right = access_right_of(attribute(element, "accessRightsURI")) or record_right
        file_access = FILE_ACCESS.get(right or "", FileAccess.OPEN)
        reference = checked_file_reference(
            "file",
            url,
            transformer.warn,
            mimetype=attribute(element, "mimeType") or None,
            access=file_access,
            embargo_until=embargo_until if file_access is FileAccess.EMBARGOED else None,
            taken=taken,
        )
        if reference is not None:
            transformer.last_files.append(reference)
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
        right = access_right_of(attribute(element, "accessRightsURI"))
        files = COAR_ACCESS_RIGHTS.get(right or "", ("", ""))[1]
        if right and files != access["files"]:
            transformer.warn(
                f"{label}: its access right {right} differs from the record's files "
                f"({access['files']}); RDM keeps one per record, the most restrictive."
            )
    if related:
        metadata.setdefault("related_identifiers", []).extend(related)
    if formats:
        metadata["formats"] = formats
