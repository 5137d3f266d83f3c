"""The tuning knobs of the protocol layer and their defaults, in one place.

Decision owned here: what a client does when its caller says nothing.  Every timeout, retry
count, wait budget and size bound of :class:`~.client.OAIClient` (and of the transport and
list streams under it) is a field of :class:`ProtocolOptions`; no other module of the layer
carries a default for them.  The defaults equal the application's configuration defaults
(``OAI_HARVESTER_*`` in ``oarepo_oaipmh_harvester/config.py``; a test keeps the two equal),
so a client built without the application behaves like one built from it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .. import __version__
from .networks import DEFAULT_FORBIDDEN_NETWORKS, parse_networks

PROJECT_URL = "https://github.com/oarepo/oarepo-oaipmh-harvester"


def user_agent(*details: str) -> str:
    """Our User-Agent: name, version and project URL, then `details` (who harvests, contact)."""
    extra = "".join(f"; {detail}" for detail in details if detail)
    return f"oarepo-oaipmh-harvester/{__version__} (+{PROJECT_URL}{extra})"


DEFAULT_USER_AGENT = user_agent()


@dataclass(frozen=True, slots=True)
class ProtocolOptions:
    """How patient, how persistent and how trusting a client is.

    ``timeout`` is ``(connect, read)`` in seconds, or one number for both; the read timeout
    applies to each read from the socket, not to a whole response.
    """

    #: Connect and read timeout of each HTTP exchange (OAI_HARVESTER_REQUEST_TIMEOUT).
    timeout: float | tuple[float, float] = (10.0, 120.0)
    #: Retries of one request on connection errors, timeouts, 429 and 5xx
    #: (OAI_HARVESTER_MAX_RETRIES).
    max_retries: int = 5
    #: Exponential backoff factor, in seconds, when the provider sends no Retry-After.
    backoff_factor: float = 1.0
    #: Upper bound on any single wait and on the total waiting of one request
    #: (OAI_HARVESTER_MAX_RETRY_WAIT).
    max_retry_wait: float = 600.0
    #: Pause between two requests to the provider (OAI_HARVESTER_REQUEST_DELAY).
    request_delay: float = 0.0
    #: Restarts of a list from its first request after badResumptionToken
    #: (OAI_HARVESTER_MAX_RESTARTS).
    max_restarts: int = 3
    #: Largest response body accepted, counted after decompression.
    max_response_bytes: int = 100 * 1024 * 1024
    #: Consecutive empty pages that still carry a resumption token before TokenLoopError.
    max_empty_pages: int = 10
    #: Networks (CIDR) the client never connects to, checked after DNS resolution on every
    #: connection, redirect targets included (see :mod:`.networks`).
    forbidden_networks: tuple[str, ...] = DEFAULT_FORBIDDEN_NETWORKS
    #: Follow redirects to any origin; otherwise only within the base URL's origin
    #: (scheme, host, port) and ``allowed_redirect_origins``.
    allow_cross_origin_redirects: bool = False
    #: Further origins redirects may lead to, e.g. ``("https://oai.example.org",)``.
    allowed_redirect_origins: tuple[str, ...] = ()
    #: Redirects followed for one request.
    max_redirects: int = 10
    #: Total time one HTTP exchange may take, from sending the request to the body's last
    #: byte (the read timeout bounds each read only).  Not retried when exceeded.
    request_deadline: float = 300.0
    #: Largest record (its serialised XML) kept; a larger one keeps its header and an error.
    max_record_bytes: int = 5 * 1024 * 1024
    #: Pages one list may have, restarts included (200,000 records at 10 a page is 20,000).
    max_pages: int = 100_000
    #: No-progress rule: over any ``progress_window`` consecutive pages of a list, the
    #: provider must average at least ``min_items_per_page`` items (or advance its cursor,
    #: within completeListSize, as much).  0 turns the rule off.
    progress_window: int = 100
    min_items_per_page: float = 0.25

    def __post_init__(self) -> None:
        timeout = self.timeout
        if isinstance(timeout, int | float):
            timeout = (float(timeout), float(timeout))
        else:
            timeout = tuple(float(value) for value in timeout)  # type: ignore[assignment]
        if len(timeout) != 2 or min(timeout) <= 0:
            raise ValueError(
                f"timeout must be positive (connect, read) seconds, not {self.timeout!r}"
            )
        object.__setattr__(self, "timeout", timeout)
        for name in ("forbidden_networks", "allowed_redirect_origins"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(str(item) for item in value))
        try:
            parse_networks(self.forbidden_networks)
        except ValueError as error:
            raise ValueError(f"forbidden_networks: {error}") from None
        for name in ("max_retries", "max_restarts", "max_empty_pages", "max_redirects"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)!r}")
        for name in ("backoff_factor", "max_retry_wait", "request_delay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 seconds, not {getattr(self, name)!r}")
        for name in (
            "max_response_bytes",
            "request_deadline",
            "max_record_bytes",
            "max_pages",
            "progress_window",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, not {getattr(self, name)!r}")
        if self.min_items_per_page < 0:
            raise ValueError(f"min_items_per_page must be >= 0, not {self.min_items_per_page!r}")

    @property
    def connect_timeout(self) -> float:
        return self.timeout[0]  # type: ignore[index]

    @property
    def read_timeout(self) -> float:
        return self.timeout[1]  # type: ignore[index]

    def with_overrides(self, **overrides: Any) -> ProtocolOptions:
        """A copy with some fields changed; unknown names raise TypeError naming the known ones."""
        unknown = set(overrides) - OPTION_NAMES
        if unknown:
            raise TypeError(
                f"Unknown protocol option(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(OPTION_NAMES))}."
            )
        return replace(self, **overrides) if overrides else self


OPTION_NAMES = frozenset(field.name for field in fields(ProtocolOptions))

__all__ = ["OPTION_NAMES", "ProtocolOptions"]
