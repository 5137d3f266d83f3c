"""The OAI-PMH client: verbs, list streaming with resumption tokens, and their failure modes.

Built on sickle: :class:`_Sickle` replaces sickle's transport (sickle's retry loop only
understands an integer ``Retry-After``) and returns :class:`OAIPage`, an ``OAIResponse``
parsed once (sickle's reparses on every access to ``.xml``).  The list streams are sickle
``BaseOAIIterator`` subclasses that add what harvesting needs: restarting on
``badResumptionToken``, loop detection, ``noRecordsMatch`` as an empty list, and values
(:mod:`.records`) instead of sickle's models.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import urlsplit

import requests
from lxml import etree
from sickle import Sickle
from sickle.iterator import BaseOAIIterator
from sickle.models import ResumptionToken
from sickle.response import OAIResponse

from .datestamps import Granularity, MalformedDatestamp, parse_datestamp
from .errors import (
    BadResumptionToken,
    MalformedResponse,
    OAIProtocolError,
    OAITransportError,
    TokenLoopError,
    TooManyRestarts,
    protocol_error,
)
from .parsing import ParsedDocument, oai, parse_document, safe_parser
from .records import (
    IdentifyProfile,
    MetadataFormat,
    OAIHeader,
    OAIRecord,
    OAISet,
    metadata_elements,
)
from .transport import RawResponse, Transport

log = logging.getLogger(__name__)

T = TypeVar("T")

DELETED_RECORD_VALUES = ("no", "transient", "persistent")
SEEN_TOKENS = 1000  # how many recent resumption tokens a stream remembers to detect loops


# -- responses ------------------------------------------------------------------------------


class OAIPage(OAIResponse):
    """One OAI-PMH response, parsed exactly once.

    ``http_response`` is the :class:`~.transport.RawResponse` without its body (the tree
    replaces it).  ``item_errors`` maps item elements to problems found in them while
    parsing, ``errors`` lists problems outside any item.
    """

    def __init__(self, raw: RawResponse, params: dict[str, str], document: ParsedDocument):
        super().__init__(replace(raw, body=b""), params)
        self.url = raw.url
        self._xml = document.root
        self.item_errors = document.item_errors
        self.errors = document.errors
        self.response_date_text = _child_text(self._xml, "responseDate")
        try:
            self.response_date: datetime | None = parse_datestamp(self.response_date_text)
        except MalformedDatestamp:
            self.response_date = None

    @property
    def xml(self) -> etree._Element:
        return self._xml

    @property
    def raw(self) -> str:
        return etree.tostring(self._xml, encoding="unicode")

    def verb_element(self, verb: str) -> etree._Element:
        element = self._xml.find(oai(verb))
        if element is None:
            raise MalformedResponse(
                f"The response from {self.url} has neither an <error> nor a <{verb}> element.",
                url=self.url,
            )
        return element

    def error(self) -> OAIProtocolError | None:
        """The exception for the response's ``<error>`` elements, if any."""
        errors = self._xml.findall(oai("error"))
        if not errors:
            return None
        first, others = errors[0], errors[1:]
        message = (first.text or "").strip()
        if others:
            also = "; ".join(f"{e.get('code', '?')}: {(e.text or '').strip()}" for e in others)
            message = f"{message} (also: {also})" if message else f"(also: {also})"
        return protocol_error((first.get("code") or "").strip(), message, self.url)


def _child_text(element: etree._Element | None, tag: str) -> str:
    return _text_of(element, oai(tag)) if element is not None else ""


# -- items ----------------------------------------------------------------------------------

_HEADER, _IDENTIFIER, _DATESTAMP, _SET_SPEC = (
    oai(tag) for tag in ("header", "identifier", "datestamp", "setSpec")
)


def _text_of(element: etree._Element, tag: str) -> str:
    child = element.find(tag)
    return (child.text or "").strip() if child is not None else ""


def _read_header(
    header: etree._Element | None, errors: list[str]
) -> tuple[str, str, bool, tuple[str, ...]]:
    if header is None:
        errors.append("the record has no <header>")
        return "", "", False, ()
    identifier = _text_of(header, _IDENTIFIER)
    if not identifier:
        errors.append("the header has no identifier")
    datestamp = _text_of(header, _DATESTAMP)
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


def _token_text(element: etree._Element | None) -> str | None:
    """The resumption token to send next, or None at the end of the list.

    Tokens are opaque and sent back byte for byte, except that a token wrapped in line
    breaks or tabs is stripped: that is a pretty-printer's indentation, never part of it.
    """
    if element is None or element.text is None or not element.text.strip():
        return None
    text = element.text
    if any(char in text for char in "\r\n\t"):
        text = text.strip()
    return text


def _int_attribute(element: etree._Element | None, name: str) -> int | None:
    value = element.get(name) if element is not None else None
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


# -- list streams ---------------------------------------------------------------------------


class _ListStream(BaseOAIIterator, Generic[T]):
    """Streams the items of an OAI-PMH list page by page; holds one page at a time.

    Construction sends the first request, so errors in the arguments surface at once.
    Attributes, updated as the stream advances: ``complete_list_size`` and ``cursor`` (from
    the latest resumptionToken, None if the provider does not send them), ``pages``
    (responses received, restarts included), ``restarts`` and ``response_date`` (of the
    very first page).
    """

    verb: ClassVar[str]
    item_tag: ClassVar[str]
    empty_codes: ClassVar[frozenset[str]] = frozenset({"noRecordsMatch"})

    def __init__(self, sickle: _Sickle, params: dict[str, str], ignore_deleted: bool = False):
        self.complete_list_size: int | None = None
        self.cursor: int | None = None
        self.expiration_date: str | None = None
        self.pages = 0
        self.restarts = 0
        self.response_date: datetime | None = None
        self.oai_response: OAIPage | None = None
        self._first_params = {"verb": self.verb, **params}
        self._items: Iterator[etree._Element] = iter(())
        # Recent tokens only: some providers pack their whole state into kilobyte-long
        # tokens, and a cycle longer than this window is not a failure mode seen in practice.
        self._seen_tokens: set[str] = set()
        self._token_order: deque[str] = deque()
        self._empty_pages = 0
        self._max_restarts = sickle.client.max_restarts
        self._max_empty_pages = sickle.client.max_empty_pages
        super().__init__(sickle, dict(self._first_params), ignore_deleted=ignore_deleted)

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        return self.next()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._first_params} pages={self.pages}>"

    def next(self) -> T:
        while True:
            for element in self._items:
                item = self._build(element, self.oai_response)
                if self.ignore_deleted and getattr(item, "deleted", False):
                    continue
                return item
            if self.resumption_token is None:
                self.oai_response = None  # let the last page go
                self._items = iter(())
                raise StopIteration
            self._next_response()

    def _build(self, element: etree._Element, page: OAIPage | None) -> T:
        raise NotImplementedError

    def _next_response(self) -> None:
        while True:
            token = self.resumption_token.token if self.resumption_token else None
            # Continuations carry only the verb and the token: repeating the selective
            # arguments is a badArgument for a strict provider.
            params = (
                {"verb": self.verb, "resumptionToken": token} if token else dict(self._first_params)
            )
            page: OAIPage = self.sickle.harvest(**params)
            self.pages += 1
            if self.pages == 1:
                self.response_date = page.response_date
            error = page.error()
            if error is None:
                break
            if token is not None and isinstance(error, BadResumptionToken):
                self._restart(page, error)
                continue
            if error.code in self.empty_codes:
                # On a continuation this means the rest of the list vanished meanwhile.
                self._finish(page)
                return
            raise error
        self._accept(page, sent_token=token)

    def _accept(self, page: OAIPage, sent_token: str | None) -> None:
        self.oai_response = page
        container = page.verb_element(self.verb)
        self._items = container.iterchildren(oai(self.item_tag))
        has_items = container.find(oai(self.item_tag)) is not None
        token_element = container.find(oai("resumptionToken"))
        if token_element is not None:
            self.cursor = _int_attribute(token_element, "cursor")
            self.complete_list_size = _int_attribute(token_element, "completeListSize")
            self.expiration_date = token_element.get("expirationDate")
        token = _token_text(token_element)
        if token is None:
            self.resumption_token = None
            return
        if token in self._seen_tokens:
            what = "the token it was just sent" if token == sent_token else "an earlier token"
            raise TokenLoopError(
                f"The provider at {page.url} answered with {what} ({token!r}) after "
                f"{self.pages} pages of {self.verb}; following it would never end.",
                url=page.url,
                token=token,
            )
        self._empty_pages = 0 if has_items else self._empty_pages + 1
        if self._empty_pages > self._max_empty_pages:
            raise TokenLoopError(
                f"The provider at {page.url} sent {self._empty_pages} empty {self.verb} pages "
                f"in a row, each with a new resumption token; giving up rather than looping.",
                url=page.url,
                token=token,
            )
        self._seen_tokens.add(token)
        self._token_order.append(token)
        if len(self._token_order) > SEEN_TOKENS:
            self._seen_tokens.discard(self._token_order.popleft())
        self.resumption_token = ResumptionToken(
            token=token,
            cursor=self.cursor,
            complete_list_size=self.complete_list_size,
            expiration_date=self.expiration_date,
        )

    def _finish(self, page: OAIPage) -> None:
        self.oai_response = page
        self._items = iter(())
        self.resumption_token = None

    def _restart(self, page: OAIPage, error: OAIProtocolError) -> None:
        # Tokens are never persisted or reused: the list is requested again from the start
        # with the same selective arguments; the consumer is idempotent.
        if self.restarts >= self._max_restarts:
            raise TooManyRestarts(
                f"The provider at {page.url} rejected its own resumption token again "
                f"({error.message or 'badResumptionToken'}); gave up after restarting the "
                f"{self.verb} list {self.restarts} times. Its tokens may expire faster than "
                f"the harvest proceeds.",
                url=page.url,
                restarts=self.restarts,
            )
        self.restarts += 1
        log.warning(
            "%s: badResumptionToken after %d pages; restarting %s from the first request "
            "(restart %d of %d)",
            page.url,
            self.pages,
            self.verb,
            self.restarts,
            self._max_restarts,
        )
        self.resumption_token = None
        self._seen_tokens.clear()
        self._token_order.clear()
        self._empty_pages = 0


class RecordStream(_ListStream[OAIRecord]):
    """ListRecords as a lazy iterator of :class:`OAIRecord`."""

    verb = "ListRecords"
    item_tag = "record"

    def _build(self, element: etree._Element, page: OAIPage | None) -> OAIRecord:
        return build_record(element, page.item_errors.get(element, ()) if page else ())


class HeaderStream(_ListStream[OAIHeader]):
    """ListIdentifiers as a lazy iterator of :class:`OAIHeader`."""

    verb = "ListIdentifiers"
    item_tag = "header"

    def _build(self, element: etree._Element, page: OAIPage | None) -> OAIHeader:
        return build_header(element, page.item_errors.get(element, ()) if page else ())


class SetStream(_ListStream[OAISet]):
    """ListSets as a lazy iterator of :class:`OAISet`; a provider without sets is empty."""

    verb = "ListSets"
    item_tag = "set"
    empty_codes = frozenset({"noSetHierarchy", "noRecordsMatch"})

    def _build(self, element: etree._Element, page: OAIPage | None) -> OAISet:
        return OAISet(spec=_child_text(element, "setSpec"), name=_child_text(element, "setName"))


class MetadataFormatStream(_ListStream[MetadataFormat]):
    """ListMetadataFormats; an item without formats is an empty list."""

    verb = "ListMetadataFormats"
    item_tag = "metadataFormat"
    empty_codes = frozenset({"noMetadataFormats"})

    def _build(self, element: etree._Element, page: OAIPage | None) -> MetadataFormat:
        return MetadataFormat(
            prefix=_child_text(element, "metadataPrefix"),
            schema=_child_text(element, "schema"),
            namespace=_child_text(element, "metadataNamespace"),
        )


# -- sickle ---------------------------------------------------------------------------------


class _Sickle(Sickle):
    """sickle with our transport and parsing underneath, and our streams on top."""

    def __init__(self, client: OAIClient) -> None:
        super().__init__(client.base_url, iterator=RecordStream, max_retries=0)
        self.client = client

    def harvest(self, **kwargs: str) -> OAIPage:
        return self.client._harvest(kwargs)

    def ListRecords(self, ignore_deleted: bool = False, **kwargs: str) -> RecordStream:  # noqa: N802
        return RecordStream(self, kwargs, ignore_deleted=ignore_deleted)

    def ListIdentifiers(self, ignore_deleted: bool = False, **kwargs: str) -> HeaderStream:  # noqa: N802
        return HeaderStream(self, kwargs, ignore_deleted=ignore_deleted)

    def ListSets(self, **kwargs: str) -> SetStream:  # noqa: N802
        return SetStream(self, kwargs)

    def ListMetadataFormats(self, **kwargs: str) -> MetadataFormatStream:  # noqa: N802
        return MetadataFormatStream(self, kwargs)


# -- client ---------------------------------------------------------------------------------


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

    ``request_count`` counts logical OAI-PMH requests (one per page, Identify, GetRecord...);
    transport-level retries of the same request are not counted.  Not thread-safe: use
    one client per thread.
    """

    #: Consecutive empty pages that still carry a resumption token before TokenLoopError.
    max_empty_pages: int = 10

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | tuple[float, float] = (10.0, 60.0),
        max_retries: int = 5,
        backoff_factor: float = 1.0,
        max_retry_wait: float = 300.0,
        user_agent: str | None = None,
        request_delay: float = 0.0,
        max_restarts: int = 3,
        max_response_bytes: int = 100 * 1024 * 1024,
        session: requests.Session | None = None,
    ) -> None:
        base_url = (base_url or "").strip()
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"The OAI-PMH base URL must be an http(s) URL, not {base_url!r}.")
        if max_retries < 0 or max_restarts < 0 or max_response_bytes <= 0:
            raise ValueError("max_retries and max_restarts must be >= 0, max_response_bytes > 0.")
        self.base_url = base_url
        self.max_restarts = max_restarts
        self._transport = Transport(
            base_url,
            timeout=timeout,
            max_retries=max_retries,
            backoff_factor=backoff_factor,
            max_retry_wait=max_retry_wait,
            user_agent=user_agent,
            request_delay=request_delay,
            max_response_bytes=max_response_bytes,
            session=session,
        )
        self._sickle = _Sickle(self)

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
        granularity_text = _child_text(element, "granularity")
        try:
            granularity = Granularity.from_identify(granularity_text or None)
        except ValueError as error:
            # Guessing could send `from` values finer than the provider accepts, or coarser
            # than intended: fail the run and let an operator look at the provider.
            raise MalformedResponse(f"{error} [request: {page.url}]", url=page.url) from None
        deleted_record = _child_text(element, "deletedRecord").lower()
        if deleted_record not in DELETED_RECORD_VALUES:
            errors.append(
                f"Identify states deletedRecord {deleted_record!r}; assuming 'no' "
                f"(deletions are not reported)."
            )
            deleted_record = "no"
        if page.response_date is None:
            # The engine derives its harvest window from this date; guessing would lose records.
            raise MalformedResponse(
                f"The Identify response from {page.url} has no valid responseDate "
                f"({page.response_date_text!r}).",
                url=page.url,
            )
        for message in errors:
            log.warning("%s: %s", page.url, message)
        return IdentifyProfile(
            repository_name=_child_text(element, "repositoryName"),
            base_url=_child_text(element, "baseURL"),
            protocol_version=_child_text(element, "protocolVersion"),
            granularity=granularity,
            deleted_record=deleted_record,
            earliest_datestamp=_child_text(element, "earliestDatestamp"),
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
        return build_record(element, page.item_errors.get(element, ()))

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
            self._raise_for_status(raw, params)
        document = parse_document(raw.body, content_type=raw.content_type, url=raw.url)
        for message in document.errors:
            log.warning("%s: %s", raw.url, message)
        return OAIPage(raw, params, document)

    def _raise_for_status(self, raw: RawResponse, params: dict[str, str]) -> None:
        # Some providers send OAI-PMH errors with a 4xx/5xx status; the error says more.
        try:
            document = parse_document(raw.body, content_type=raw.content_type, url=raw.url)
        except MalformedResponse:
            document = None
        if document is not None:
            error = OAIPage(raw, params, document).error()
            if error is not None:
                raise error
        after = f" (after {raw.retries} retries)" if raw.retries else ""
        raise OAITransportError(
            f"HTTP {raw.status} {raw.reason} from {raw.url}{after}.",
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
]
