"""Building the client's values (:mod:`.records`) from the XML items of a response.

Decision owned here: what counts as a problem with one item, and that such a problem never
loses the item.  A builder never raises on bad content: a record without an identifier,
with a malformed datestamp or without metadata is returned with a note in ``errors`` (the
engine stores those notes on the record's tracking row), so one bad record cannot stop a
harvest.  A record whose XML is larger than ``max_record_bytes`` keeps its header and a
note, but not its metadata: it then fails alone, like any record without metadata, instead
of costing many times its size in memory on its way through the engine.  sickle's models are not used: they turn metadata into dicts of strings and have
nowhere to put such notes.
"""

from __future__ import annotations

import copy
from typing import Any

from lxml import etree

from .datestamps import MalformedDatestamp, parse_datestamp
from .parsing import OAI_NAMESPACE, child_text, oai, safe_parser, text_of
from .records import MetadataFormat, OAIHeader, OAIRecord, OAISet, metadata_elements

# The format every OAI-PMH provider must serve (the protocol's own oai_dc schema).
OAI_DC_NAMESPACE = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC_ELEMENTS_NAMESPACE = "http://purl.org/dc/elements/1.1/"
DC_TERMS_NAMESPACE = "http://purl.org/dc/terms/"

_RECORD, _HEADER, _IDENTIFIER, _DATESTAMP, _SET_SPEC = (
    oai(tag) for tag in ("record", "header", "identifier", "datestamp", "setSpec")
)


def _read_header(
    header: etree._Element | None, errors: list[str]
) -> tuple[str, str, bool, tuple[str, ...]]:
    if header is None:
        errors.append("the record has no <header>")
        return "", "", False, ()
    identifier = text_of(header, _IDENTIFIER)
    if not identifier:
        errors.append("the header has no identifier")
    datestamp = text_of(header, _DATESTAMP)
    if not datestamp:
        errors.append("the header has no datestamp")
    else:
        try:
            parse_datestamp(datestamp)
        except MalformedDatestamp as error:
            errors.append(str(error))
    deleted = (header.get("status") or "").strip().lower() == "deleted"
    set_specs = tuple(
        text for element in header.iterfind(_SET_SPEC) if (text := (element.text or "").strip())
    )
    return identifier, datestamp, deleted, set_specs


def build_header(element: etree._Element, errors: Any = ()) -> OAIHeader:
    """An :class:`OAIHeader` from a ``<header>`` element."""
    found = list(errors)
    identifier, datestamp, deleted, set_specs = _read_header(element, found)
    return OAIHeader(identifier, datestamp, deleted, set_specs, tuple(found))


def build_record(
    element: etree._Element, errors: Any = (), *, max_bytes: int | None = None
) -> OAIRecord:
    """An :class:`OAIRecord` from a ``<record>`` element (never raises on bad content).

    ``max_bytes`` bounds the record's serialised XML (UTF-8); a larger record is returned
    without its metadata, with the header only in ``xml`` and the reason in ``errors``.
    """
    found = list(errors)
    header = _read_header(element.find(_HEADER), found)  # identifier, datestamp, deleted, sets
    deleted = header[2]
    xml = etree.tostring(element, encoding="unicode", with_tail=False)
    size = _utf8_size(xml, max_bytes)
    metadata = None
    if max_bytes is not None and size > max_bytes:
        found.append(
            f"the record's XML is {size} bytes, more than the allowed {max_bytes} "
            f"(max_record_bytes); its metadata was dropped"
        )
        xml = _header_only(*header)
    elif not deleted:
        metadata = _metadata_of(element, found)
    return OAIRecord(*header, metadata=metadata, xml=xml, errors=tuple(found))


def _metadata_of(record: etree._Element, errors: list[str]) -> etree._Element | None:
    """A copy of the record's metadata element (a problem with it noted in `errors`).

    A copy of its own, so that a held record pins nothing of its page: a third of what
    parsing it again from the record's XML on first use costs (the reader's main cost).
    """
    children = metadata_elements(record)
    if not children:
        errors.append("the record is not deleted but has no metadata")
        return None
    if len(children) > 1 and all(_is_dublin_core(child) for child in children):
        # The elements of oai_dc (and DC terms, which some writers mix in) without their
        # wrapper: one record, not the first of many.
        errors.append(
            "<metadata> holds Dublin Core elements without their oai_dc:dc element; read as one"
        )
        return _oai_dc_of(children)
    if len(children) > 1:
        errors.append(f"<metadata> has {len(children)} elements instead of one; using the first")
    metadata = copy.deepcopy(children[0])
    metadata.tail = None
    return metadata


def _utf8_size(text: str, limit: int | None) -> int:
    """The UTF-8 size of ``text``; for non-ASCII text that is certainly within ``limit``
    (at most 4 bytes a character), its length, sparing an encoding of every record."""
    if text.isascii() or limit is None or len(text) * 4 <= limit:
        return len(text)
    return len(text.encode("utf-8"))


def _header_only(identifier: str, datestamp: str, deleted: bool, set_specs: tuple[str, ...]) -> str:
    """A ``<record>`` with just a header, for a record whose XML is not kept."""
    record = etree.Element(_RECORD, nsmap={None: OAI_NAMESPACE})
    header = etree.SubElement(record, _HEADER)
    if deleted:
        header.set("status", "deleted")
    etree.SubElement(header, _IDENTIFIER).text = identifier
    etree.SubElement(header, _DATESTAMP).text = datestamp
    for spec in set_specs:
        etree.SubElement(header, _SET_SPEC).text = spec
    return etree.tostring(record, encoding="unicode")


def record_from_xml(xml: str, errors: Any = ()) -> OAIRecord:
    """Rebuild an :class:`OAIRecord` from its ``xml`` (e.g. after it crossed a task queue)."""
    return build_record(etree.fromstring(xml, safe_parser()), errors)


def _is_dublin_core(element: etree._Element) -> bool:
    return etree.QName(element).namespace in (DC_ELEMENTS_NAMESPACE, DC_TERMS_NAMESPACE)


def _oai_dc_of(elements: list[etree._Element]) -> etree._Element:
    """An ``oai_dc:dc`` element holding copies of `elements` (some providers leave it out)."""
    wrapper = etree.Element(
        f"{{{OAI_DC_NAMESPACE}}}dc", nsmap={"oai_dc": OAI_DC_NAMESPACE, "dc": DC_ELEMENTS_NAMESPACE}
    )
    for element in elements:
        copied = copy.deepcopy(element)
        copied.tail = None
        wrapper.append(copied)
    return wrapper


def build_set(element: etree._Element) -> OAISet:
    """An :class:`OAISet` from a ``<set>`` element."""
    return OAISet(spec=child_text(element, "setSpec"), name=child_text(element, "setName"))


def build_metadata_format(element: etree._Element) -> MetadataFormat:
    """A :class:`MetadataFormat` from a ``<metadataFormat>`` element."""
    return MetadataFormat(
        prefix=child_text(element, "metadataPrefix"),
        schema=child_text(element, "schema"),
        namespace=child_text(element, "metadataNamespace"),
    )


__all__ = [
    "build_header",
    "build_metadata_format",
    "build_record",
    "build_set",
    "record_from_xml",
]
