"""Immutable values the OAI-PMH client hands out.

Decision owned here: what a harvested item looks like to the engine (fields, equality,
pickling, lazy metadata); building them from XML is :mod:`.items`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lxml import etree

from .datestamps import Granularity, MalformedDatestamp, parse_datestamp
from .parsing import oai, safe_parser

_METADATA_TAG = oai("metadata")


def _parse_or_none(value: str) -> datetime | None:
    try:
        return parse_datestamp(value)
    except MalformedDatestamp:
        return None


@dataclass(frozen=True, slots=True)
class OAIHeader:
    """A record header (ListIdentifiers); ``errors`` lists problems found while reading it."""

    identifier: str
    datestamp: str
    deleted: bool
    set_specs: tuple[str, ...]
    errors: tuple[str, ...] = ()

    @property
    def datestamp_value(self) -> datetime | None:
        """The datestamp as an aware UTC datetime, None if it is malformed."""
        return _parse_or_none(self.datestamp)


_FROM_XML: Any = object()


class OAIRecord:
    """One harvested record (immutable).

    ``datestamp`` is exactly what the provider sent.  ``xml`` is the complete ``<record>``
    element serialised as text.  ``metadata`` is the single child of ``<metadata>`` (e.g.
    ``oai_dc:dc``) as a standalone element, None for tombstones and for records that came
    without metadata (the latter with an error); the client gives it (a copy out of the
    page, cheaper than parsing ``xml`` again), and a record rebuilt from ``xml`` alone (a
    stored or pickled one) parses it from there on first use.  ``errors`` lists problems found
    while reading the record; the record is returned regardless and the consumer decides.
    """

    __slots__ = ("identifier", "datestamp", "deleted", "set_specs", "xml", "errors", "_metadata")

    identifier: str
    datestamp: str
    deleted: bool
    set_specs: tuple[str, ...]
    xml: str
    errors: tuple[str, ...]

    def __init__(
        self,
        identifier: str,
        datestamp: str,
        deleted: bool,
        set_specs: tuple[str, ...],
        metadata: etree._Element | None = _FROM_XML,
        xml: str = "",
        errors: tuple[str, ...] = (),
    ) -> None:
        for name, value in (
            ("identifier", identifier),
            ("datestamp", datestamp),
            ("deleted", deleted),
            ("set_specs", tuple(set_specs)),
            ("xml", xml),
            ("errors", tuple(errors)),
            ("_metadata", None if deleted and metadata is _FROM_XML else metadata),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"OAIRecord is immutable (tried to set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"OAIRecord is immutable (tried to delete {name!r})")

    def _key(self) -> tuple[Any, ...]:
        return (
            self.identifier,
            self.datestamp,
            self.deleted,
            self.set_specs,
            self.xml,
            self.errors,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OAIRecord):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Elements do not pickle; the metadata is parsed again from `xml` on the other side.
        args = (self.identifier, self.datestamp, self.deleted, self.set_specs)
        return _record_from_state, (*args, self.xml, self.errors)

    def __copy__(self) -> OAIRecord:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, Any]) -> OAIRecord:
        return self

    def __repr__(self) -> str:
        state = "deleted" if self.deleted else "live"
        return f"OAIRecord({self.identifier!r}, {self.datestamp!r}, {state})"

    @property
    def metadata(self) -> etree._Element | None:
        if self._metadata is _FROM_XML:
            object.__setattr__(self, "_metadata", metadata_element(self.xml))
        return self._metadata

    @property
    def datestamp_value(self) -> datetime | None:
        """The datestamp as an aware UTC datetime, None if it is malformed."""
        return _parse_or_none(self.datestamp)

    @property
    def header(self) -> OAIHeader:
        """The header part of the record."""
        return OAIHeader(self.identifier, self.datestamp, self.deleted, self.set_specs, self.errors)


def _record_from_state(
    identifier: str,
    datestamp: str,
    deleted: bool,
    set_specs: tuple[str, ...],
    xml: str,
    errors: tuple[str, ...],
) -> OAIRecord:
    return OAIRecord(identifier, datestamp, deleted, set_specs, xml=xml, errors=errors)


def metadata_elements(record: etree._Element) -> list[etree._Element]:
    """The element children of a ``<record>``'s ``<metadata>`` (comments skipped)."""
    container = record.find(_METADATA_TAG)
    if container is None:
        return []
    return [child for child in container if isinstance(child.tag, str)]


def header_identifier(xml: str) -> str | None:
    """The identifier in the header of a serialised ``<record>``, None if it has none."""
    if not xml:
        return None
    record = etree.fromstring(xml.encode("utf-8"), safe_parser("utf-8"))
    identifier = record.findtext(f"{oai('header')}/{oai('identifier')}")
    return identifier.strip() if identifier and identifier.strip() else None


def metadata_element(xml: str) -> etree._Element | None:
    """The first element inside ``<metadata>`` of a serialised ``<record>``, standalone."""
    if not xml:
        return None
    container = etree.fromstring(xml.encode("utf-8"), safe_parser("utf-8")).find(_METADATA_TAG)
    if container is None:
        return None
    first = next((child for child in container if isinstance(child.tag, str)), None)
    if first is None:
        return None
    # A copy, so that the element is the root of its own small tree.
    element = copy.deepcopy(first)
    element.tail = None
    return element


@dataclass(frozen=True)
class MetadataFormat:
    """One entry of ListMetadataFormats."""

    prefix: str
    schema: str
    namespace: str


@dataclass(frozen=True)
class OAISet:
    """One entry of ListSets."""

    spec: str
    name: str


@dataclass(frozen=True)
class IdentifyProfile:
    """What a provider says about itself in Identify.

    ``deleted_record`` is normalised to "no", "transient" or "persistent"; a missing or
    unknown value becomes "no" (the assumption that trusts deletions least) with a note in
    ``errors``.  A missing or unknown granularity becomes DAY, which every provider must
    support, also with a note.  ``response_date`` is the responseDate of this response.
    """

    repository_name: str
    base_url: str
    protocol_version: str
    granularity: Granularity
    deleted_record: str
    earliest_datestamp: str
    response_date: datetime
    compression: tuple[str, ...]
    admin_emails: tuple[str, ...]
    errors: tuple[str, ...] = ()


__all__ = ["IdentifyProfile", "MetadataFormat", "OAIHeader", "OAIRecord", "OAISet"]
