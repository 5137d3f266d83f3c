"""Building the client's values (:mod:`.records`) from the XML items of a response.

Decision owned here: what counts as a problem with one item, and that such a problem never
loses the item.  A builder never raises on bad content: a record without an identifier,
with a malformed datestamp or without metadata is returned with a note in ``errors`` (the
engine stores those notes on the record's tracking row), so one bad record cannot stop a
harvest.  sickle's models are not used: they turn metadata into dicts of strings and have
nowhere to put such notes.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from .datestamps import MalformedDatestamp, parse_datestamp
from .parsing import child_text, oai, safe_parser, text_of
from .records import MetadataFormat, OAIHeader, OAIRecord, OAISet, metadata_elements

_HEADER, _IDENTIFIER, _DATESTAMP, _SET_SPEC = (
    oai(tag) for tag in ("header", "identifier", "datestamp", "setSpec")
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


def build_record(element: etree._Element, errors: Any = ()) -> OAIRecord:
    """An :class:`OAIRecord` from a ``<record>`` element (never raises on bad content)."""
    found = list(errors)
    identifier, datestamp, deleted, set_specs = _read_header(element.find(_HEADER), found)
    if not deleted:
        children = metadata_elements(element)
        if not children:
            found.append("the record is not deleted but has no metadata")
        elif len(children) > 1:
            found.append(f"<metadata> has {len(children)} elements instead of one; using the first")
    # The metadata element is parsed from the text when first used (most re-harvested
    # records never are), so a held record pins nothing of its page.
    return OAIRecord(
        identifier=identifier,
        datestamp=datestamp,
        deleted=deleted,
        set_specs=set_specs,
        xml=etree.tostring(element, encoding="unicode", with_tail=False),
        errors=tuple(found),
    )


def record_from_xml(xml: str, errors: Any = ()) -> OAIRecord:
    """Rebuild an :class:`OAIRecord` from its ``xml`` (e.g. after it crossed a task queue)."""
    return build_record(etree.fromstring(xml, safe_parser()), errors)


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
