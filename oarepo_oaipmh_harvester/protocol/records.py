"""Immutable values the OAI-PMH client hands out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lxml import etree

from .datestamps import Granularity, MalformedDatestamp, parse_datestamp


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


@dataclass(frozen=True, slots=True)
class OAIRecord:
    """One harvested record.

    ``datestamp`` is exactly what the provider sent.  ``metadata`` is the single child of
    ``<metadata>`` (e.g. ``oai_dc:dc``) as a standalone element, so that holding a record
    does not keep its whole response page alive; it is None for tombstones and for records
    that came without metadata (the latter with an error).  ``xml`` is the complete
    ``<record>`` element serialised as text.  ``errors`` lists problems found while reading
    the record; the record is returned regardless and the consumer decides what to do.
    """

    identifier: str
    datestamp: str
    deleted: bool
    set_specs: tuple[str, ...]
    metadata: etree._Element | None
    xml: str
    errors: tuple[str, ...] = ()

    @property
    def datestamp_value(self) -> datetime | None:
        """The datestamp as an aware UTC datetime, None if it is malformed."""
        return _parse_or_none(self.datestamp)

    @property
    def header(self) -> OAIHeader:
        """The header part of the record."""
        return OAIHeader(self.identifier, self.datestamp, self.deleted, self.set_specs, self.errors)


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
