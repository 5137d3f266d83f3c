"""One OAI-PMH response as the rest of the layer sees it.

Decision owned here: what a parsed response offers and how its ``<error>`` elements become
one exception.  :class:`OAIPage` is a sickle ``OAIResponse`` (same ``params``,
``http_response``, ``xml`` and ``raw``) that is parsed exactly once by
:func:`~.parsing.parse_document`; sickle's own ``OAIResponse.xml`` parses the body again on
every access, with ``recover=True``, which silently drops whatever it cannot read.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from lxml import etree
from sickle.response import OAIResponse

from .datestamps import MalformedDatestamp, parse_datestamp
from .errors import MalformedResponse, OAIProtocolError, protocol_error
from .parsing import ParsedDocument, child_text, oai
from .transport import RawResponse


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
        self.response_date_text = child_text(self._xml, "responseDate")
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


__all__ = ["OAIPage"]
