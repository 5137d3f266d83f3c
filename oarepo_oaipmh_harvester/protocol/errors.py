"""Exceptions of the OAI-PMH protocol layer.

Decision owned here: how each failure is named and worded.  Every exception derives from :class:`OAIHarvestError` and its ``str()`` is a complete
sentence an operator can act on (what failed, where, and usually why).  All of them pickle
with their attributes intact, because Celery moves exceptions between processes.
"""

from __future__ import annotations

from typing import Any, ClassVar

PROVIDER_TEXT_LIMIT = 300


def limited(text: str, limit: int = PROVIDER_TEXT_LIMIT) -> str:
    """A provider's own text (an OAI-PMH error message, a token) cut to a length fit for a
    message; such text comes only from well-formed OAI-PMH documents, never from other
    bodies. The services and the fixture loader bound operators' values with it too."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _restore(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class OAIHarvestError(Exception):
    """Base class of everything the protocol layer raises."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__

    def __reduce__(self) -> tuple[Any, ...]:
        # The keyword-only constructors would break the default Exception pickling.
        return (_restore, (type(self), self.args, dict(self.__dict__)))


# -- OAI-PMH <error code="..."> ------------------------------------------------------------


class OAIProtocolError(OAIHarvestError):
    """The provider answered with an OAI-PMH ``<error>`` element.

    ``code`` is the OAI-PMH error code, ``message`` the provider's own text (may be empty).
    Known codes have a subclass each; an unknown code raises this class with ``code`` set.
    """

    code: str = "unknown"
    explanation: ClassVar[str] = "the provider reported an error"

    def __init__(self, message: str = "", *, code: str | None = None, url: str | None = None):
        if code is not None:
            self.code = code
        self.message = message
        text = f"OAI-PMH error '{limited(self.code, 60)}' ({self.explanation})"
        if message:
            text += f": {limited(message)}"
        if url:
            text += f" [request: {url}]"
        super().__init__(text, url=url)


class BadArgument(OAIProtocolError):
    code = "badArgument"
    explanation = "the request has an illegal, missing or repeated argument"


class BadResumptionToken(OAIProtocolError):
    code = "badResumptionToken"
    explanation = "the resumption token is invalid or expired"


class BadVerb(OAIProtocolError):
    code = "badVerb"
    explanation = "the verb is illegal, missing or repeated"


class CannotDisseminateFormat(OAIProtocolError):
    code = "cannotDisseminateFormat"
    explanation = "the provider does not offer this metadata format"


class IdDoesNotExist(OAIProtocolError):
    code = "idDoesNotExist"
    explanation = "the identifier is unknown to the provider"


class NoRecordsMatch(OAIProtocolError):
    code = "noRecordsMatch"
    explanation = "no records match the request"


class NoMetadataFormats(OAIProtocolError):
    code = "noMetadataFormats"
    explanation = "no metadata formats are available for the item"


class NoSetHierarchy(OAIProtocolError):
    code = "noSetHierarchy"
    explanation = "the provider does not support sets"


PROTOCOL_ERRORS: dict[str, type[OAIProtocolError]] = {
    cls.code: cls
    for cls in (
        BadArgument,
        BadResumptionToken,
        BadVerb,
        CannotDisseminateFormat,
        IdDoesNotExist,
        NoRecordsMatch,
        NoMetadataFormats,
        NoSetHierarchy,
    )
}


def protocol_error(code: str, message: str = "", url: str | None = None) -> OAIProtocolError:
    """The exception for an OAI-PMH error code; unknown codes keep their code."""
    cls = PROTOCOL_ERRORS.get(code)
    if cls is None:
        return OAIProtocolError(message, code=code or "unknown", url=url)
    return cls(message, url=url)


# -- transport and content ----------------------------------------------------------------


class OAITransportError(OAIHarvestError):
    """The HTTP exchange failed: an error status, or no answer at all after the retries.

    ``status_code`` is the last HTTP status, or None when no response was received
    (connection refused, DNS failure, timeout, connection dropped mid-body).
    """

    def __init__(self, message: str, *, url: str | None = None, status_code: int | None = None):
        super().__init__(message, url=url)
        self.status_code = status_code


class ForbiddenAddress(OAITransportError):
    """The provider's host (or a redirect target) is, or resolves to, a forbidden address.

    ``address`` is the IP address, ``network`` the forbidden network (CIDR) it is in.
    Never retried: the configuration, not the network, has to change.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        address: str = "",
        network: str = "",
        host: str | None = None,
    ) -> None:
        super().__init__(message, url=url)
        self.address = address
        self.network = network
        self.host = host

    @classmethod
    def for_address(
        cls, address: str, network: str, *, host: str | None = None, url: str | None = None
    ) -> ForbiddenAddress:
        named = f" (host {host})" if host and host.strip("[]") != address else ""
        return cls(
            f"The provider address {address}{named} is in a forbidden network {network}; "
            f"the harvester does not connect there (forbidden_networks).",
            url=url,
            address=address,
            network=network,
            host=host,
        )


class RedirectNotAllowed(OAITransportError):
    """The provider redirected to another origin (scheme, host, port) than it was asked at.

    ``target_origin`` is where it pointed.  Allowed only with
    ``allow_cross_origin_redirects`` or when the origin is in ``allowed_redirect_origins``.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status_code: int | None = None,
        target_origin: str = "",
    ) -> None:
        super().__init__(message, url=url, status_code=status_code)
        self.target_origin = target_origin


class RequestDeadlineExceeded(OAITransportError):
    """One HTTP exchange took longer than ``request_deadline`` in total.

    The read timeout applies to each read from the socket, so a provider that sends a few
    bytes at a time could otherwise keep one request open indefinitely.  Not retried: a
    provider that trickles does it again, and each retry would cost the whole deadline.
    """

    def __init__(self, message: str, *, url: str | None = None, deadline: float = 0.0) -> None:
        super().__init__(message, url=url)
        self.deadline = deadline
        self.limit = "request_deadline"


class MalformedResponse(OAIHarvestError):
    """The response is not a usable OAI-PMH document (not XML, wrong root, too large...)."""


class TokenLoopError(OAIHarvestError):
    """The provider's resumption tokens do not advance (a loop that would never end)."""

    def __init__(self, message: str, *, url: str | None = None, token: str | None = None):
        super().__init__(message, url=url)
        self.token = token


class TooManyPages(TokenLoopError):
    """A list went on for more than ``max_pages`` pages (``limit`` names the option)."""

    def __init__(
        self, message: str, *, url: str | None = None, token: str | None = None, pages: int = 0
    ) -> None:
        super().__init__(message, url=url, token=token)
        self.pages = pages
        self.limit = "max_pages"


class NoProgress(TokenLoopError):
    """The provider keeps sending tokens, but the list does not advance.

    ``limit`` names the option or rule that was broken (``progress_window`` /
    ``min_items_per_page``, or ``completeListSize`` when the cursor passed it).
    """

    def __init__(
        self, message: str, *, url: str | None = None, token: str | None = None, limit: str = ""
    ) -> None:
        super().__init__(message, url=url, token=token)
        self.limit = limit


class TooManyRestarts(OAIHarvestError):
    """``badResumptionToken`` kept coming back after the allowed number of restarts."""

    def __init__(self, message: str, *, url: str | None = None, restarts: int = 0) -> None:
        super().__init__(message, url=url)
        self.restarts = restarts


__all__ = [
    "BadArgument",
    "BadResumptionToken",
    "BadVerb",
    "CannotDisseminateFormat",
    "ForbiddenAddress",
    "IdDoesNotExist",
    "MalformedResponse",
    "NoMetadataFormats",
    "NoProgress",
    "NoRecordsMatch",
    "NoSetHierarchy",
    "OAIHarvestError",
    "OAIProtocolError",
    "OAITransportError",
    "PROTOCOL_ERRORS",
    "RedirectNotAllowed",
    "RequestDeadlineExceeded",
    "TokenLoopError",
    "TooManyPages",
    "TooManyRestarts",
    "limited",
    "protocol_error",
]
