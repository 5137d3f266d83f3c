"""The OAI-PMH client: one object per provider, one method per verb.

Decision owned here: what each verb returns and which of a provider's answers are fatal
(Identify without a usable granularity or responseDate, GetRecord without a record, an HTTP
error status without an OAI-PMH error document; with one, the document decides).  The parts live next door: HTTP in
:mod:`.transport`, safe parsing in :mod:`.parsing`, the response type in :mod:`.response`,
values built from XML in :mod:`.items`, the token-following list streams in
:mod:`.streams`, and every tuning default in :mod:`.options`.

How much of sickle is used, and why not more.  sickle provides the shape: :class:`_Sickle`
is a ``Sickle`` (the verb methods ``ListRecords``, ``ListIdentifiers``... and ``harvest``),
the streams are ``BaseOAIIterator`` subclasses, pages are ``OAIResponse`` subclasses and
tokens ``sickle.models.ResumptionToken``, so code written against sickle's API works with
ours.  Its behaviour is replaced where it is wrong for harvesting:

- ``Sickle.harvest``/``_request`` call the module-level ``requests.get`` (no session, so no
  keep-alive and no adapter to retry through or to check addresses in), retry only on an
  integer ``Retry-After``, follow redirects anywhere and read bodies of any size, for any
  time; :class:`~.transport.Transport` does the HTTP instead;
- ``OAIResponse.xml`` re-parses on every access with a recovering parser that silently
  drops what it cannot read; :class:`~.response.OAIPage` is parsed once, strictly;
- ``BaseOAIIterator._next_response`` raises on every ``<error>``, takes any descendant
  named ``resumptionToken`` and never detects a loop (see :mod:`.streams`);
- sickle's models turn metadata into dicts and cannot carry per-record problems (see
  :mod:`.items`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import requests
from sickle import Sickle

from .credentials import ProviderCredentials
from .datestamps import Granularity
from .errors import MalformedResponse, OAITransportError, limited
from .items import build_header, build_record, record_from_xml
from .options import ProtocolOptions
from .parsing import child_text, oai, parse_document
from .records import IdentifyProfile, MetadataFormat, OAIRecord, OAISet
from .response import OAIPage
from .streams import HeaderStream, MetadataFormatStream, RecordStream, SetStream
from .transport import RawResponse, Transport

log = logging.getLogger(__name__)

DELETED_RECORD_VALUES = ("no", "transient", "persistent")


class _Sickle(Sickle):
    """sickle with our transport and parsing underneath, and our streams on top."""

    def __init__(self, client: OAIClient) -> None:
        super().__init__(client.base_url, iterator=RecordStream, max_retries=0)
        self.client = client
        self.options = client.options

    def harvest(self, **kwargs: str) -> OAIPage:
        return self.client._harvest(kwargs)

    def note_fault(self, kind: str, text: str) -> None:
        self.client.note_fault(kind, text)

    def ListRecords(self, ignore_deleted: bool = False, **kwargs: str) -> RecordStream:  # noqa: N802
        return RecordStream(self, kwargs, ignore_deleted=ignore_deleted)

    def ListIdentifiers(self, ignore_deleted: bool = False, **kwargs: str) -> HeaderStream:  # noqa: N802
        return HeaderStream(self, kwargs, ignore_deleted=ignore_deleted)

    def ListSets(self, **kwargs: str) -> SetStream:  # noqa: N802
        return SetStream(self, kwargs)

    def ListMetadataFormats(self, **kwargs: str) -> MetadataFormatStream:  # noqa: N802
        return MetadataFormatStream(self, kwargs)


def _selective(
    metadata_prefix: str, set_spec: str | None, from_: str | None, until: str | None
) -> dict[str, str]:
    for name, value in (("from_", from_), ("until", until)):
        if value is not None and not isinstance(value, str):
            raise TypeError(
                f"{name} must be a datestamp string (see format_datestamp), not {value!r}"
            )
    params = {"metadataPrefix": metadata_prefix}
    if set_spec is not None:
        params["set"] = set_spec
    if from_ is not None:
        params["from"] = from_
    if until is not None:
        params["until"] = until
    return params


class OAIClient:
    """A client for one OAI-PMH provider (base URL).

    Tuning comes from ``options`` (a :class:`~.options.ProtocolOptions`, whose defaults are
    the application's), with single fields overridden by keyword: ``OAIClient(url,
    max_retries=2)`` is ``OAIClient(url, ProtocolOptions(max_retries=2))``.  ``user_agent``
    (None: :data:`~.options.DEFAULT_USER_AGENT`) and ``session`` (None: a session of the
    client's own) are not tuning and stay separate.

    ``request_count`` counts logical OAI-PMH requests (one per page, Identify, GetRecord...);
    transport-level retries of the same request are not counted.  Not thread-safe: use
    one client per thread.
    """

    def __init__(
        self,
        base_url: str,
        options: ProtocolOptions | None = None,
        *,
        user_agent: str | None = None,
        session: requests.Session | None = None,
        credentials: ProviderCredentials | None = None,
        **overrides: Any,
    ) -> None:
        base_url = (base_url or "").strip()
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"The OAI-PMH base URL must be an http(s) URL, not {base_url!r}.")
        self.base_url = base_url
        self.options = (options or ProtocolOptions()).with_overrides(**overrides)
        self._transport = Transport(
            base_url,
            self.options,
            user_agent=user_agent,
            session=session,
            credentials=credentials,
        )
        self._sickle = _Sickle(self)
        self.provider_faults: dict[str, str] = {}
        """Faults of the provider that were worked around, by kind: what a run warns of."""

    @property
    def max_restarts(self) -> int:
        return self.options.max_restarts

    @property
    def max_empty_pages(self) -> int:
        """Consecutive empty pages that still carry a resumption token before TokenLoopError."""
        return self.options.max_empty_pages

    @property
    def request_count(self) -> int:
        """Logical OAI-PMH requests sent so far (transport retries not counted)."""
        return self._transport.request_count

    @property
    def session(self) -> requests.Session:
        return self._transport.session

    def close(self) -> None:
        """Close the HTTP session (a session passed in by the caller is left open)."""
        self._transport.close()

    def __enter__(self) -> OAIClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<OAIClient {self.base_url}>"

    # -- verbs -----------------------------------------------------------------------------
    def identify(self) -> IdentifyProfile:
        """Identify; MalformedResponse without a usable granularity or responseDate."""
        page = self._harvest({"verb": "Identify"})
        self._raise_error(page)
        element = page.verb_element("Identify")
        errors = list(page.errors)
        granularity_text = child_text(element, "granularity")
        try:
            granularity = Granularity.from_identify(granularity_text or None)
        except ValueError as error:
            # Guessing could send `from` values finer than the provider accepts, or coarser
            # than intended: fail the run and let an operator look at the provider.
            raise MalformedResponse(f"{error} [request: {page.url}]", url=page.url) from None
        deleted_record = child_text(element, "deletedRecord").lower()
        if deleted_record not in DELETED_RECORD_VALUES:
            errors.append(
                f"Identify states deletedRecord {limited(repr(deleted_record))}; assuming 'no' "
                f"(deletions are not reported)."
            )
            deleted_record = "no"
        if page.response_date is None:
            # The engine derives its harvest window from this date; guessing would lose records.
            raise MalformedResponse(
                f"The Identify response from {page.url} has no valid responseDate "
                f"({limited(repr(page.response_date_text))}).",
                url=page.url,
            )
        for message in errors:
            log.warning("%s: %s", page.url, message)
        return IdentifyProfile(
            repository_name=child_text(element, "repositoryName"),
            base_url=child_text(element, "baseURL"),
            protocol_version=child_text(element, "protocolVersion"),
            granularity=granularity,
            deleted_record=deleted_record,
            earliest_datestamp=child_text(element, "earliestDatestamp"),
            response_date=page.response_date,
            compression=tuple(
                (c.text or "").strip() for c in element.iterfind(oai("compression")) if c.text
            ),
            admin_emails=tuple(
                (a.text or "").strip() for a in element.iterfind(oai("adminEmail")) if a.text
            ),
            errors=tuple(errors),
        )

    def list_records(
        self,
        metadata_prefix: str,
        *,
        set_spec: str | None = None,
        from_: str | None = None,
        until: str | None = None,
    ) -> RecordStream:
        """ListRecords; ``from_``/``until`` are datestamps already formatted for the provider.

        Sends the first request now (so bad arguments raise here); noRecordsMatch is an empty
        stream.
        """
        return self._sickle.ListRecords(**_selective(metadata_prefix, set_spec, from_, until))

    def list_identifiers(
        self,
        metadata_prefix: str,
        *,
        set_spec: str | None = None,
        from_: str | None = None,
        until: str | None = None,
    ) -> HeaderStream:
        """ListIdentifiers, like :meth:`list_records` but headers only."""
        return self._sickle.ListIdentifiers(**_selective(metadata_prefix, set_spec, from_, until))

    def get_record(self, identifier: str, metadata_prefix: str) -> OAIRecord:
        """GetRecord; IdDoesNotExist when the provider does not know the identifier."""
        page = self._harvest(
            {"verb": "GetRecord", "identifier": identifier, "metadataPrefix": metadata_prefix}
        )
        self._raise_error(page)
        element = page.verb_element("GetRecord").find(oai("record"))
        if element is None:
            raise MalformedResponse(
                f"The GetRecord response from {page.url} contains no <record>.", url=page.url
            )
        return build_record(
            element, page.item_errors.get(element, ()), max_bytes=self.options.max_record_bytes
        )

    def list_sets(self) -> Iterator[OAISet]:
        """All sets, following resumption tokens; a provider without sets yields none."""
        return self._sickle.ListSets()

    def list_metadata_formats(self, identifier: str | None = None) -> list[MetadataFormat]:
        """The provider's formats, or those of one item (IdDoesNotExist if unknown).

        noMetadataFormats (an item without any format) is an empty list.
        """
        params = {"identifier": identifier} if identifier is not None else {}
        return list(self._sickle.ListMetadataFormats(**params))

    # -- plumbing --------------------------------------------------------------------------
    def _raise_error(self, page: OAIPage) -> None:
        error = page.error()
        if error is not None:
            raise error

    def _harvest(self, params: dict[str, str]) -> OAIPage:
        """Send one OAI-PMH request and parse its response (called by _Sickle.harvest)."""
        raw = self._transport.get(params)
        if not raw.ok:
            return self._error_page_or_raise(raw, params)
        document = parse_document(raw.body, content_type=raw.content_type, url=raw.url)
        for message in document.errors:
            log.warning("%s: %s", raw.url, message)
        if document.repaired_characters:
            self.note_fault(
                "forbidden characters",
                "The provider sends characters that XML forbids (control characters, or "
                "bytes that are not its encoding); they were taken out, and the records they "
                "were in carry a warning saying so.",
            )
        return OAIPage(raw, params, document)

    def note_fault(self, kind: str, text: str) -> None:
        """A fault of the provider that the harvest worked around: told once per kind (the
        run's warnings), not for every page or record it affects."""
        if kind not in self.provider_faults:
            self.provider_faults[kind] = text
            log.warning("%s: %s", self.base_url, text)

    def _error_page_or_raise(self, raw: RawResponse, params: dict[str, str]) -> OAIPage:
        """The page of an OAI-PMH error document sent with an HTTP error status.

        invenio-oaiserver (every InvenioRDM, Zenodo) sends noRecordsMatch and
        badResumptionToken with 422, other providers with 400 or 404: the error document
        decides, exactly as with status 200 (an empty window, a restart...). A body that is
        no OAI-PMH error is a transport failure.
        """
        try:
            document = parse_document(raw.body, content_type=raw.content_type, url=raw.url)
        except MalformedResponse:
            document = None
        if document is not None:
            page = OAIPage(raw, params, document)
            if page.error() is not None:
                return page
        after = f"after {raw.retries} retries; " if raw.retries else ""
        kind = (raw.content_type or "no content type").split(";")[0].strip()
        raise OAITransportError(
            f"HTTP {raw.status} {raw.reason} from {raw.url} ({after}{len(raw.body)} bytes, "
            f"{kind}; not an OAI-PMH error document).",
            url=raw.url,
            status_code=raw.status,
        )


__all__ = [
    "HeaderStream",
    "MetadataFormatStream",
    "OAIClient",
    "OAIPage",
    "RecordStream",
    "SetStream",
    "build_header",
    "build_record",
    "record_from_xml",
]
