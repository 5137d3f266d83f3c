"""The list verbs as lazy streams: following resumption tokens, and when to stop.

Decision owned here: when a list ends, when it starts over and when it is given up.  A list
ends on an absent or empty token (and on ``noRecordsMatch`` & co., which are empty lists);
it restarts from its first request on ``badResumptionToken``, and when it ends short of its
``completeListSize`` after a token had to be sent again (both at most ``max_restarts``
times); it is given up, with :class:`~.errors.TokenLoopError`, when the provider's tokens
do not advance (a token seen before, endless empty pages) or, by :mod:`.progress`, when the
list goes on too long or gets nowhere.

Why a list that came out short restarts: a token is sent again when its answer was lost (a
read timeout, a dropped connection, a 502 from a proxy).  Most providers answer the same
page again, but invenio-oaiserver (every InvenioRDM, Zenodo) keeps a search scroll behind
its tokens, which the lost request has already moved on: the answer is the *next* page,
under the cursor of the lost one, and nothing in it shows the gap.  Only the count does: the
list ends with fewer items than it announced.  Taking that for the end would lose a page and
let a reconciliation delete its records; the window is asked for again instead.  A list
short for other reasons (records deleted during the harvest) without a token sent again
ends as it is.

The streams keep sickle's iterator protocol (``BaseOAIIterator``: the constructor sends the
first request, ``next()`` yields items, ``resumption_token``/``oai_response``/``params``),
but replace its ``_next_response``, because sickle's turns every ``<error>`` into an
exception (no empty ``noRecordsMatch``, no restart), looks for ``resumptionToken`` anywhere
in the document (``.//``, so an element of that name inside a record's metadata would be
taken for the token), and never notices a token that repeats.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator
from datetime import datetime
from typing import ClassVar, Generic, Protocol, TypeVar

from lxml import etree
from sickle.iterator import BaseOAIIterator
from sickle.models import ResumptionToken

from .errors import (
    BadResumptionToken,
    TokenLoopError,
    TooManyRestarts,
    limited,
)
from .items import build_header, build_metadata_format, build_record, build_set
from .options import ProtocolOptions
from .parsing import oai
from .progress import ProgressGuard
from .records import MetadataFormat, OAIHeader, OAIRecord, OAISet
from .response import OAIPage


class PageSource(Protocol):
    """Where a stream gets its pages: the client (its sickle), which sends the requests."""

    endpoint: str
    options: ProtocolOptions

    def harvest(self, **params: str) -> OAIPage:
        """The page of one OAI-PMH request (an error document is a page too)."""
        ...

    def note_fault(self, kind: str, text: str) -> None:
        """A fault of the provider that the stream worked around (told once per kind)."""
        ...


log = logging.getLogger(__name__)

T = TypeVar("T")

SEEN_TOKENS = 1000  # how many recent resumption tokens a stream remembers to detect loops


def token_text(element: etree._Element | None) -> str | None:
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


def int_attribute(element: etree._Element | None, name: str) -> int | None:
    value = element.get(name) if element is not None else None
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


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

    def __init__(self, sickle: PageSource, params: dict[str, str], ignore_deleted: bool = False):
        self.complete_list_size: int | None = None
        self.cursor: int | None = None
        self.expiration_date: str | None = None
        self.pages = 0
        self.restarts = 0
        self.response_date: datetime | None = None
        self.oai_response: OAIPage | None = None
        self.options = sickle.options
        self._first_params = {"verb": self.verb, **params}
        self._items: Iterator[etree._Element] = iter(())
        # Recent tokens only: some providers pack their whole state into kilobyte-long
        # tokens, and a cycle longer than this window is not a failure mode seen in practice.
        self._seen_tokens: set[str] = set()
        self._token_order: deque[str] = deque()
        self._empty_pages = 0
        # Of the current pass (a restart starts a new one): items received, and whether a
        # continuation had to be sent again.
        self._items_in_pass = 0
        self._resent_in_pass = False
        self._sighted: set[int] = set()
        self._progress = ProgressGuard(self.options, self.verb)
        super().__init__(sickle, dict(self._first_params), ignore_deleted=ignore_deleted)

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
                gap = self._gap_after_resend()
                if gap is not None:
                    self._restart(self.oai_response, gap)
                    self._next_response()
                    continue
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
                self._restart(
                    page,
                    f"it rejected its own resumption token "
                    f"({error.message or 'badResumptionToken'})",
                )
                continue
            if error.code in self.empty_codes:
                if token is not None:
                    # The list ends, but not as the protocol says a list ends (an empty
                    # resumptionToken on its last page): nothing is lost, the operator hears.
                    self.sickle.note_fault(
                        f"{error.code} on resumption",
                        f"The provider answered {error.code} to a request with a resumption "
                        f"token instead of ending its {self.verb} list with an empty "
                        f"resumptionToken; the list was taken as complete.",
                    )
                self._finish(page)
                return
            raise error
        self._accept(page, sent_token=token)

    def _accept(self, page: OAIPage, sent_token: str | None) -> None:
        self.oai_response = page
        container = page.verb_element(self.verb)
        self._items = container.iterchildren(oai(self.item_tag))
        keys = [self._item_key(item) for item in container.iterchildren(oai(self.item_tag))]
        item_count = len(keys)
        # Progress is what this list had not sent before: a provider that sends the same
        # identifiers again and again, with a new token each time, goes nowhere.
        new_items = sum(1 for key in keys if self._first_sighting(key))
        self._items_in_pass += item_count
        if sent_token is not None and page.http_response.resent:
            self._resent_in_pass = True
        token_element = container.find(oai("resumptionToken"))
        if token_element is not None:
            self.cursor = int_attribute(token_element, "cursor")
            self.complete_list_size = int_attribute(token_element, "completeListSize")
            self.expiration_date = token_element.get("expirationDate")
        token = token_text(token_element)
        if token is None:
            self.resumption_token = None
            return
        if token in self._seen_tokens:
            what = "the token it was just sent" if token == sent_token else "an earlier token"
            raise TokenLoopError(
                f"The provider at {page.url} answered with {what} ({limited(repr(token))}) after "
                f"{self.pages} pages of {self.verb}; following it would never end.",
                url=page.url,
                token=token,
            )
        progress = self._progress.check(
            url=page.url,
            pages=self.pages,
            items=new_items,
            cursor=self.cursor,
            complete_list_size=self.complete_list_size,
            token=token,
        )
        # An empty page that moved its cursor (within completeListSize) is not "empty".
        self._empty_pages = 0 if progress else self._empty_pages + 1
        if self._empty_pages > self.options.max_empty_pages:
            repeats = (
                " (pages with only identifiers it had already sent in this list)"
                if item_count
                else ""
            )
            raise TokenLoopError(
                f"The provider at {page.url} sent {self._empty_pages} empty {self.verb} pages "
                f"in a row{repeats}, each with a new resumption token; giving up rather than "
                f"looping (max_empty_pages).",
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

    def _item_key(self, element: etree._Element) -> str | None:
        """What tells this item from the others of the list (None: nothing, each is new)."""
        return None

    def _first_sighting(self, key: str | None) -> bool:
        """Whether `key` is new in this pass of the list (hashes kept: a 200,000-record list
        costs a few MB)."""
        if key is None:
            return True
        digest = hash(key)
        if digest in self._sighted:
            return False
        self._sighted.add(digest)
        return True

    def _finish(self, page: OAIPage) -> None:
        self.oai_response = page
        self._items = iter(())
        self.resumption_token = None

    def _gap_after_resend(self) -> str | None:
        """Why the list that just ended cannot be trusted to be complete, or None."""
        size = self.complete_list_size
        if not self._resent_in_pass or size is None or self._items_in_pass >= size:
            return None
        return (
            f"its list ended after {self._items_in_pass} of the {size} items it announced "
            f"(completeListSize), and a resumption token had been sent again after a lost "
            f"answer: its tokens are cursors that the lost request moved on (invenio-oaiserver "
            f"does this), so a page was skipped"
        )

    def _restart(self, page: OAIPage | None, reason: str) -> None:
        # Tokens are never persisted or reused: the list is requested again from the start
        # with the same selective arguments; the consumer is idempotent.
        url = page.url if page is not None else self.sickle.endpoint
        max_restarts = self.options.max_restarts
        if self.restarts >= max_restarts:
            raise TooManyRestarts(
                f"The provider at {url} could not give its {self.verb} list whole: {reason}. "
                f"Gave up after restarting the list {self.restarts} times (max_restarts); its "
                f"tokens may expire faster than the harvest proceeds, or its answers be lost "
                f"again and again.",
                url=url,
                restarts=self.restarts,
            )
        self.restarts += 1
        log.warning(
            "%s: %s; restarting %s from the first request after %d pages (restart %d of %d)",
            url,
            reason,
            self.verb,
            self.pages,
            self.restarts,
            max_restarts,
        )
        self.resumption_token = None
        self._seen_tokens.clear()
        self._token_order.clear()
        self._empty_pages = 0
        self._items_in_pass = 0
        self._resent_in_pass = False
        self._sighted.clear()
        self._progress.reset()


def _errors_of(element: etree._Element, page: OAIPage | None) -> list[str]:
    return page.item_errors.get(element, []) if page is not None else []


class RecordStream(_ListStream[OAIRecord]):
    """ListRecords as a lazy iterator of :class:`OAIRecord`."""

    verb = "ListRecords"
    item_tag = "record"

    def _build(self, element: etree._Element, page: OAIPage | None) -> OAIRecord:
        return build_record(
            element, _errors_of(element, page), max_bytes=self.options.max_record_bytes
        )

    def _item_key(self, element: etree._Element) -> str | None:
        return element.findtext(f"{oai('header')}/{oai('identifier')}")


class HeaderStream(_ListStream[OAIHeader]):
    """ListIdentifiers as a lazy iterator of :class:`OAIHeader`."""

    verb = "ListIdentifiers"
    item_tag = "header"

    def _build(self, element: etree._Element, page: OAIPage | None) -> OAIHeader:
        return build_header(element, _errors_of(element, page))

    def _item_key(self, element: etree._Element) -> str | None:
        return element.findtext(oai("identifier"))


class SetStream(_ListStream[OAISet]):
    """ListSets as a lazy iterator of :class:`OAISet`; a provider without sets is empty."""

    verb = "ListSets"
    item_tag = "set"
    empty_codes = frozenset({"noSetHierarchy", "noRecordsMatch"})

    def _build(self, element: etree._Element, page: OAIPage | None) -> OAISet:
        return build_set(element)


class MetadataFormatStream(_ListStream[MetadataFormat]):
    """ListMetadataFormats; an item without formats is an empty list."""

    verb = "ListMetadataFormats"
    item_tag = "metadataFormat"
    empty_codes = frozenset({"noMetadataFormats"})

    def _build(self, element: etree._Element, page: OAIPage | None) -> MetadataFormat:
        return build_metadata_format(element)


__all__ = ["HeaderStream", "MetadataFormatStream", "RecordStream", "SetStream"]
